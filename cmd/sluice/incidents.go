package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/sluice-egress/sluice/config"
	"github.com/sluice-egress/sluice/dashboard"
	"github.com/sluice-egress/sluice/gateway"
	"github.com/sluice-egress/sluice/incident"
	"github.com/sluice-egress/sluice/store"
)

// defaultEmitTimeout bounds how long a request waits for its incident to be
// committed when incidentSink.Timeout is zero (store.incident_timeout's
// default).
const defaultEmitTimeout = time.Duration(config.DefaultIncidentTimeout)

// incidentSink is the gateway's EventSink: it counts every event in the
// metrics at once and stores it as an incident through the batching writer,
// returning the id only once it is committed.
type incidentSink struct {
	Writer  *store.Writer
	Metrics *dashboard.Metrics
	Logger  *slog.Logger
	// Timeout bounds the wait for the commit. Zero: defaultEmitTimeout.
	Timeout time.Duration
	// OnUnrecorded, if set, is called for each incident the store could not
	// take in time (a metric).
	OnUnrecorded func()

	probes probeBudget // doctor probes left unstored (probes.go)
}

var _ gateway.EventSink = (*incidentSink)(nil)

// Emit counts e and records it. Unauthenticated refusals are counted but not
// stored: they belong to no tenant, and anyone who can reach the proxy port
// (a health check, a scanner) could otherwise fill the database. An
// incident the store cannot commit within Timeout is an error: the gateway
// then refuses rather than forward anything unrecorded.
func (k *incidentSink) Emit(ctx context.Context, e incident.Incident) (string, error) {
	if k.Metrics != nil {
		k.Metrics.Event(e.Tenant, e.Reason, e.Action, e.Rule)
	}
	if k.Writer == nil || e.Tenant == "" || e.Reason == gateway.ReasonAuthRequired || (e.Probe && k.probes.skip(e.Tenant)) {
		return "", nil
	}
	timeout := k.Timeout
	if timeout <= 0 {
		timeout = defaultEmitTimeout
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
