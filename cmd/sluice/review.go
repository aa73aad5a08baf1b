package main

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sluice-egress/sluice/config"
	"github.com/sluice-egress/sluice/dashboard"
	"github.com/sluice-egress/sluice/incident"
	"github.com/sluice-egress/sluice/internal/desk"
	"github.com/sluice-egress/sluice/internal/runstore"
	"github.com/sluice-egress/sluice/rules"
	"github.com/sluice-egress/sluice/runs"
	"github.com/sluice-egress/sluice/store"
)

// review is the review loop's wiring: the live queue the dashboard streams
// and the observation writer behind the gateway's Observer.
type review struct {
	queue *dashboard.Queue
	obs   *store.ObservationWriter

	mu    sync.Mutex
	modes map[string]bool // shadow by "tenant/class", as last loaded (auditModes)
}

// openReview wires the review loop, after openRuns and before openAdmin:
// refusals inside TLS, the gateway's Desk (sandbox filings and holds) on
// the runs service, the live queue and webhooks for every request filed or
// decided, and the observation log of what runs did.
func (s *Server) openReview() {
	cfg := s.Config
	rs := runstore.New(s.ops.Store)
	s.review.queue = &dashboard.Queue{}
	s.review.obs = &store.ObservationWriter{Store: s.ops.Store, Logger: s.Logger}
	s.auditModes(cfg)
	s.gw.RefuseInTLS = cfg.Review.RefuseInTLS
	s.gw.Observer = desk.Observer{W: s.review.obs}
	if s.runs == nil {
		return
	}
	s.runs.Review = rs
	s.runs.FilingBurst, s.runs.FilingEvery = cfg.Review.Burst(), cfg.Review.Every()
	s.runs.OnAccess = func(x runs.AccessRequest, c runs.AccessContext) {
		s.review.queue.Publish(dashboard.QueueEventOf(store.AccessRequest(x), store.AccessContext(c)))
		if s.alerts != nil && x.State == store.AccessPending && c.Joined <= 1 {
			// A new request goes to the webhooks as an incident-shaped
			// notice (not stored: the request itself is).
			s.alerts.Alert(incident.Incident{ID: x.ID, Time: x.CreatedAt, Tenant: x.Tenant, Class: c.Class, Run: c.Run,
				Kind: "access-request", Reason: "access-requested", Action: "review", Host: x.Host,
				Snippet: incident.Clip(x.Justification, 200)})
		}
	}
	s.gw.Desk = desk.Desk{Service: s.runs, Store: rs}
}

// closeReview writes the observations still pending.
func (s *Server) closeReview(ctx context.Context) {
	if s.review.obs != nil {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if err := s.review.obs.Close(cctx); err != nil {
			s.Logger.Warn("observations not written at shutdown", "err", err)
		}
	}
}

// auditModes records in the audit log every class whose mode a reload
// changed (shadow to enforce above all: from then on refusals refuse).
func (s *Server) auditModes(cfg *config.Config) {
	now := cfg.ShadowClasses()
	s.review.mu.Lock()
	before := s.review.modes
	s.review.modes = now
	s.review.mu.Unlock()
	if before == nil || s.ops.Store == nil {
		return
	}
	name := func(shadow bool) string {
		if shadow {
			return rules.ModeShadow
		}
		return rules.ModeEnforce
	}
	for _, k := range slices.Sorted(maps.Keys(now)) {
		was, ok := before[k]
		if !ok || was == now[k] {
			continue
		}
		tenant, class, _ := strings.Cut(k, "/")
		detail := "class " + class + ": " + name(was) + " -> " + name(now[k])
		if _, err := s.ops.Store.AppendAudit(context.Background(), store.AuditEntry{Actor: "sluice (config reload)",
			Action: "policy.mode", Tenant: tenant, Target: class, Detail: detail}); err != nil {
			s.Logger.Error("audit entry not written", "action", "policy.mode", "tenant", tenant, "class", class, "err", err)
		}
		s.Logger.Info("class mode changed", "tenant", tenant, "class", class, "detail", detail)
	}
}
