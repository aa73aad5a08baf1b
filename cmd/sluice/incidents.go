package main

import (
	"context"
	"log/slog"
	"strings"
	"unicode/utf8"

	"github.com/sluice-egress/sluice/dashboard"
	"github.com/sluice-egress/sluice/gateway"
	"github.com/sluice-egress/sluice/store"
)

// incidentSink is the gateway's EventSink: it counts every event in the
// metrics at once and stores it as an incident through the batching writer,
// returning the id only once it is committed.
type incidentSink struct {
	Writer  *store.Writer
	Metrics *dashboard.Metrics
	Logger  *slog.Logger
}

var _ gateway.EventSink = (*incidentSink)(nil)

// Emit counts e and records it. Unauthenticated refusals are counted but not
// stored: they belong to no tenant, and anyone who can reach the proxy port
// (a health check, a scanner) could otherwise fill the database.
func (k *incidentSink) Emit(ctx context.Context, e gateway.Event) string {
	if k.Metrics != nil {
		k.Metrics.Event(e.Tenant, e.Reason, e.Action, e.Rule)
	}
	if k.Writer == nil || e.Tenant == "" || e.Reason == gateway.ReasonAuthRequired {
		return ""
	}
	// Not bound to the request: a client that hangs up right after being
	// refused must not take its incident with it. A full queue still slows
	// the caller down (Write blocks) rather than drop anything.
	id, err := k.Writer.Write(context.WithoutCancel(ctx), incidentOf(e))
	if err != nil {
		k.Logger.Error("incident not recorded", "tenant", e.Tenant, "reason", e.Reason, "err", err)
		return ""
	}
	return id
}

// Bounds on what an incident keeps of attacker-controlled text, so that a
// sandbox cannot grow the database with huge paths or headers.
const (
	maxShort   = 256
	maxPath    = 2048
	maxSnippet = 1024
)

// incidentOf maps an event to an incident. It keeps what the event gives and
// never more: the path loses anything from '?' or '#' on (the event carries
// none, and a raw query string is where secrets travel), and long fields are
// cut.
func incidentOf(e gateway.Event) store.Incident {
	path := e.Path
	if i := strings.IndexAny(path, "?#"); i >= 0 {
		path = path[:i]
	}
	return store.Incident{
		Time:        e.Time,
		Tenant:      clip(e.Tenant, maxShort),
		Class:       clip(e.Class, maxShort),
		Run:         clip(e.Run, maxShort),
		Kind:        clip(e.Kind, maxShort),
		Reason:      clip(e.Reason, maxShort),
		Action:      clip(e.Action, maxShort),
		Host:        clip(e.Host, maxShort),
		Port:        e.Port,
		Method:      clip(e.Method, maxShort),
		Path:        clip(path, maxPath),
		Client:      clip(e.Client, maxShort),
		Rule:        clip(e.Rule, maxShort),
		Where:       clip(e.Where, maxShort),
		Decoding:    clip(e.Decoding, maxShort),
		Snippet:     clip(e.Snippet, maxSnippet),
		Fingerprint: clip(e.Fingerprint, maxShort),
	}
}

// clip cuts s to at most n bytes on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
