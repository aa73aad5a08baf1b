// Package incidentsink is the gateway's EventSink on the incident store:
// every event counted at once, stored through the batching writer, its id
// returned only once it is committed, and a stalled store refusing (fail
// closed) instead of hanging requests.
package incidentsink

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/sluice-egress/sluice/gateway"
	"github.com/sluice-egress/sluice/incident"
)

// DefaultTimeout bounds how long a request waits for its incident to be
// committed when Sink.Timeout is zero: long enough for a batch behind a busy
// disk, short enough that a stalled store refuses requests (fail closed)
// instead of hanging them.
const DefaultTimeout = 2 * time.Second

// Writer stores an incident and returns its id once committed
// (*store.Writer).
type Writer interface {
	Write(ctx context.Context, in incident.Incident) (string, error)
}

// Counter counts events in the metrics (*dashboard.Metrics).
type Counter interface {
	Event(tenant, reason, action, rule string)
}

// Sink is the gateway's EventSink: it counts every event in the
// metrics at once and stores it as an incident through the batching writer,
// returning the id only once it is committed.
type Sink struct {
	// Writer stores incidents; nil: events are only counted.
	Writer Writer
	// Metrics counts every event; nil: none.
	Metrics Counter
	// Logger nil: errors are not logged (they are returned).
	Logger *slog.Logger
	// Timeout bounds the wait for the commit. Zero: DefaultTimeout.
	Timeout time.Duration
	// OnUnrecorded, if set, is called for each incident the store could not
	// take in time (a metric).
	OnUnrecorded func()

	probes probeBudget // doctor probes left unstored (probes.go)
}

var _ gateway.EventSink = (*Sink)(nil)

// Emit counts e and records it. Unauthenticated refusals are counted but not
// stored: they belong to no tenant, and anyone who can reach the proxy port
// (a health check, a scanner) could otherwise fill the database. An
// incident the store cannot commit within Timeout is an error: the gateway
// then refuses rather than forward anything unrecorded.
func (k *Sink) Emit(ctx context.Context, e incident.Incident) (string, error) {
	if k.Metrics != nil {
		k.Metrics.Event(e.Tenant, e.Reason, e.Action, e.Rule)
	}
	if k.Writer == nil || e.Tenant == "" || e.Reason == gateway.ReasonAuthRequired || (e.Probe && k.probes.skip(e.Tenant)) {
		return "", nil
	}
	timeout := k.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	// Not bound to the request: a client that hangs up right after being
	// refused must not take its incident with it. Bound in time instead: a
	// full queue or a stalled commit must not hold the request forever.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	id, err := k.Writer.Write(wctx, e.Bounded())
	if err != nil {
		if k.OnUnrecorded != nil {
			k.OnUnrecorded()
		}
		if k.Logger != nil {
			k.Logger.Error("incident not recorded", "tenant", e.Tenant, "reason", e.Reason, "err", err)
		}
		return "", fmt.Errorf("incident store: %w", err)
	}
	return id, nil
}
