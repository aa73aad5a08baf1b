package gateway

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/sluice-egress/sluice/incident"
	"github.com/sluice-egress/sluice/rules"
	"github.com/sluice-egress/sluice/scanner"
)

// Reasons the gateway itself gives for a refusal, besides the policy's own
// (rules.Reason*) and the scanner's (scanner.Reason*). They are sent in the
// Sluice-Reason header and counted.
const (
	ReasonAuthRequired        = "proxy-auth-required"
	ReasonAddressNotAllowed   = "address-not-allowed"
	ReasonDomainFronting      = "domain-fronting"
	ReasonUpgradeNotAllowed   = "upgrade-not-allowed"
	ReasonNotProxyRequest     = "not-a-proxy-request"
	ReasonUpstreamTLS         = "upstream-tls-failed"
	ReasonUpstreamUnreachable = "upstream-unreachable"
	ReasonTLSHandshake        = "client-tls-failed"
	ReasonCAUnavailable       = "ca-unavailable"
	// ReasonIncidentStoreUnavailable: a finding the gateway would have
	// forwarded with a record (alert, redact) could not be recorded; the
	// request was refused rather than forwarded unrecorded.
	ReasonIncidentStoreUnavailable = "incident-store-unavailable"
)

// EventSink receives what the gateway refused, blocked or flagged, as
// incidents without an ID. Emit is called on the request path: it must
// return within a bound of its own, never hang on a stalled store. It
// returns the incident id when the event was recorded as one, or "" when it
// is deliberately not stored (an unauthenticated client's refusal); err when
// it should have been recorded and could not be (the store is down or did
// not take it in time). The gateway then fails closed: a refusal is still
// sent, and a request it would have forwarded with a finding is refused
// (503, ReasonIncidentStoreUnavailable).
type EventSink interface {
	Emit(ctx context.Context, in incident.Incident) (incidentID string, err error)
}

// discardSink is used when Gateway.Events is nil.
type discardSink struct{}

func (discardSink) Emit(context.Context, incident.Incident) (string, error) { return "", nil }

// PathMasker may be implemented by a Scanner to mask what its rules find
// in a path that was not scanned with its request (scanner.SafePath).
type PathMasker interface {
	SafePath(ctx context.Context, tenant, path string) string
}

// evidencePath is the path of a request that was not scanned (or not
// yet) as its incident keeps it: what the rules find masked, then what
// looks like data replaced (incident.RedactPath): the shape heuristics
// alone miss tokens the rules know (a GitHub token without a digit). A
// scanner that panics on it leaves no path.
func (g *Gateway) evidencePath(ctx context.Context, tenant, p string) (kept string) {
	if m, ok := g.Scanner.(PathMasker); ok && p != "" && p != "/" {
		defer func() {
			if recover() != nil {
				kept = "/{redacted}"
			}
		}()
		p = m.SafePath(context.WithoutCancel(ctx), tenant, p)
	}
	return incident.RedactPath(p)
}

// evidenceHost is EvidenceHost with the gateway's scanner.
func (g *Gateway) evidenceHost(ctx context.Context, tenant, host string) string {
	hs, _ := g.Scanner.(HostScanner)
	return EvidenceHost(ctx, hs, tenant, host)
}

// EvidenceHost is the host of a refused request (or a refused DNS query)
// as its incident and log line keep it: the labels left of the domain it
// aimed at are checked by hs (nil: not) as those a wildcard matched would
// be (ScanHost: hex, base32, base64url, credential prefixes, secrets
// chunked across labels) and masked whole when they hold data, then what
// looks like data is replaced (incident.RedactHost). A denied name is where
// DNS-style exfiltration puts its payload, and the shapes alone miss a
// lower-case token label.
func EvidenceHost(ctx context.Context, hs HostScanner, tenant, host string) (kept string) {
	n := strings.Count(host, ".") - 1 // all but the domain's two labels
	if hs == nil || n <= 0 {
		return incident.RedactHost(host)
	}
	defer func() {
		if recover() != nil {
			kept = incident.RedactHostLabels(host, n)
		}
	}()
	if res, err := hs.ScanHost(context.WithoutCancel(ctx), tenant, host, n); err != nil || len(res.Findings) > 0 {
		return incident.RedactHostLabels(host, n)
	}
	return incident.RedactHost(host)
}

// recordFinding is the one place a finding becomes an event: it emits the
// finding of r (for the run id, towards host:port) as an incident keeping
// path, logs it, and returns the incident id or "". The caller sets the
// finding's Action to what the gateway does with it. err says the finding
// could not be recorded: the caller must not forward what it belongs to.
func (g *Gateway) recordFinding(ctx context.Context, r *http.Request, id rules.Identity, host string, port int, path string, f scanner.Finding) (string, error) {
	reason, level := scanner.KindReason(f.Kind), slog.LevelInfo
	if f.Kind == KindCredential {
		// The gateway's own kind: the sandbox holds a real secret.
		reason, level = ReasonRealCredential, slog.LevelWarn
	}
	inc, err := g.events().Emit(ctx, incident.Incident{
		Time: time.Now(), Tenant: id.Tenant, Class: id.Class, Run: id.Run,
		Kind: f.Kind, Reason: reason, Action: f.Action.String(),
		Host: host, Port: port, Method: r.Method, Path: path, Client: r.RemoteAddr,
		Rule: f.Rule, Where: f.Where, Decoding: f.Decoding, Snippet: f.Snippet, Fingerprint: f.Fingerprint,
	})
	g.logger().Log(ctx, level, "finding", logTenant, id.Tenant, logClass, id.Class, logHost, host, logPort, port,
		"kind", f.Kind, "rule", f.Rule, "where", f.Where, "decoding", f.Decoding,
		"action", f.Action.String(), "fingerprint", f.Fingerprint, "incident", inc)
	if err != nil {
		g.logger().Error("finding not recorded", logTenant, id.Tenant, logHost, host, "rule", f.Rule, logErr, err)
	}
	return inc, err
}
