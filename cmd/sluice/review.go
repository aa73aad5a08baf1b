package main

import (
	"context"
	"time"

	"github.com/sluice-egress/sluice/dashboard"
	"github.com/sluice-egress/sluice/internal/desk"
	"github.com/sluice-egress/sluice/internal/runstore"
	"github.com/sluice-egress/sluice/runs"
	"github.com/sluice-egress/sluice/store"
)

// review is the review loop's wiring: the live queue the dashboard streams
// and the observation writer behind the gateway's Observer.
type review struct {
	queue *dashboard.Queue
	obs   *store.ObservationWriter

	modes desk.Modes // audits the classes' mode changes on reload
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
	s.review.modes.Logger = s.Logger
	if s.ops.Store != nil {
		s.review.modes.Store = s.ops.Store
	}
	s.review.modes.Set(cfg.ShadowClasses())
	s.gw.RefuseInTLS = cfg.Review.RefuseInTLS
	s.gw.Observer = desk.Observer{W: s.review.obs}
	if s.runs == nil {
		return
	}
	s.runs.Review = rs
	s.runs.FilingBurst, s.runs.FilingEvery = cfg.Review.Burst(), cfg.Review.Every()
	s.runs.OnAccess = func(x runs.AccessRequest, c runs.AccessContext) {
		s.review.queue.Publish(dashboard.QueueEventOf(store.AccessRequest(x), store.AccessContext(c)))
		if n, ok := desk.Notice(x, c); ok && s.alerts != nil {
			s.alerts.Alert(n)
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
