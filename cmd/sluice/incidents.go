package main

import (
	"context"
	"log/slog"

	"github.com/sluice-egress/sluice/dashboard"
	"github.com/sluice-egress/sluice/gateway"
	"github.com/sluice-egress/sluice/incident"
	"github.com/sluice-egress/sluice/store"
)

// incidentSink is the gateway's EventSink: it counts every event in the
// metrics at once and stores it as an incident through the batching writer,
// returning the id only once it is committed.
type incidentSink struct {
	Writer  *store.Writer
	Metrics *dashboard.Metrics
	Logger  *slog.Logger

	probes probeBudget // doctor probes left unstored (probes.go)
}

var _ gateway.EventSink = (*incidentSink)(nil)

// Emit counts e and records it. Unauthenticated refusals are counted but not
// stored: they belong to no tenant, and anyone who can reach the proxy port
// (a health check, a scanner) could otherwise fill the database.
func (k *incidentSink) Emit(ctx context.Context, e incident.Incident) string {
	if k.Metrics != nil {
		k.Metrics.Event(e.Tenant, e.Reason, e.Action, e.Rule)
	}
	if k.Writer == nil || e.Tenant == "" || e.Reason == gateway.ReasonAuthRequired || (e.Probe && k.probes.skip(e.Tenant)) {
		return ""
	}
	// Not bound to the request: a client that hangs up right after being
	// refused must not take its incident with it. A full queue still slows
	// the caller down (Write blocks) rather than drop anything.
	id, err := k.Writer.Write(context.WithoutCancel(ctx), e.Bounded())
	if err != nil {
		k.Logger.Error("incident not recorded", "tenant", e.Tenant, "reason", e.Reason, "err", err)
		return ""
	}
	return id
}
