package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-egress/sluice/dashboard"
	"github.com/sluice-egress/sluice/gateway"
	"github.com/sluice-egress/sluice/internal/database"
	"github.com/sluice-egress/sluice/internal/incidentsink"
	"github.com/sluice-egress/sluice/internal/operatorconf"
	"github.com/sluice-egress/sluice/rules"
	"github.com/sluice-egress/sluice/store"
)

// openStore opens the incident store (DataDir/sluice.db, or PostgreSQL), the batching
// writer behind the gateway's EventSink and the metrics. A store that cannot
// be opened is a start-up error: nothing is served unrecorded.
func (s *Server) openStore() error {
	st, err := database.Open(context.Background(), s.Config)
	if err != nil {
		return fmt.Errorf("incident store: %w", err)
	}
	o := &s.ops
	o.Store, o.Logger, o.Retention = st, s.Logger, time.Duration(s.Config.Store.Retention)
	s.metrics = dashboard.NewMetrics(dashboard.MetricsOptions{
		OpenTunnels: func() int {
			if s.gw == nil {
				return 0
			}
			return s.gw.OpenTunnels()
		},
		ParkedTunnels: func() int {
			if s.gw == nil {
				return 0
			}
			return s.gw.ParkedTunnels()
		},
		QueueDepth: func() int { return o.Writer.Depth() },
		TextsNotRescanned: func() uint64 {
			if s.scanner == nil {
				return 0
			}
			return s.scanner.CleanHits()
		},
	})
	o.Writer = &store.Writer{Store: st, Logger: s.Logger, OnBatch: s.metrics.ObserveBatch}
	s.cas.OnLeaf = s.metrics.ObserveLeaf
	// Incidents the store could not take in time: each one refused a
	// request (fail closed), so an operator must see them rise.
	unrecorded := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "sluice_incidents_unrecorded_total",
		Help: "Incidents the store could not commit in time; the requests they belonged to were refused.",
	})
	s.metrics.Registry.MustRegister(unrecorded)
	s.events = &incidentsink.Sink{Writer: o.Writer, Metrics: s.metrics, Logger: s.Logger, OnUnrecorded: unrecorded.Inc,
		Timeout: time.Duration(s.Config.Store.IncidentTimeout)}
	return nil
}

// countBytes wraps the upstream dialer so that the metrics count the bytes
// on every upstream connection.
func (s *Server) countBytes(d gateway.Dialer) gateway.Dialer {
	return &gateway.CountingDialer{Dialer: d, Sent: s.metrics.AddSent, Received: s.metrics.AddReceived}
}

// openAdmin binds the admin listener and hooks the policy reloads into the
// metrics.
func (s *Server) openAdmin() error {
	o := &s.ops
	if s.watch != nil {
		if prev := s.watch.OnResult; prev != nil {
			s.watch.OnResult = func(ok bool) { s.metrics.PolicyReload(ok); prev(ok) }
		} else {
			s.watch.OnResult = s.metrics.PolicyReload
		}
	}
	ln, err := net.Listen("tcp", s.Config.Listen.Admin)
	if err != nil {
		return fmt.Errorf("admin listener: %w (change listen.admin or --admin)", err)
	}
	users, err := operatorconf.DashboardUsers(s.Config, os.Getenv)
	if err != nil {
		ln.Close()
		return err
	}
	o.AdminLn = ln
	o.Admin = &http.Server{
		Handler:           dashboard.NewRouter(s.dashboardOptions(users)),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	return nil
}

// dashboardOptions wires the dashboard and API to the store, the policy in
// force and the users.
func (s *Server) dashboardOptions(users []dashboard.User) dashboard.Options {
	engine := func() *rules.Engine { return s.policy.Engine() }
	return dashboard.Options{
		Metrics: s.metrics, Ready: s.ready, Logger: s.Logger,
		Store:      s.ops.Store,
		Engine:     engine,
		Users:      users,
		Identify:   func(user, token string) (rules.Identity, error) { return s.policy.Identify(user, token) },
		SessionTTL: time.Duration(s.Config.Dashboard.SessionTTL),
		Runs:       s.runs,
		Queue:      s.review.queue,
	}
}

// AdminAddr is the bound admin address (useful with port 0).
func (s *Server) AdminAddr() string { return s.ops.AdminLn.Addr().String() }

// ready is /readyz: the policy, every tenant's CA and the store answer, and
// the gateway is not shutting down.
func (s *Server) ready(ctx context.Context) error {
	if s.ops.Draining() {
		return errors.New("shutting down")
	}
	if s.policy.Engine() == nil {
		return errors.New("no policy loaded")
	}
	for _, t := range s.policy.Engine().Tenants() {
		if _, err := s.cas.Authority(t); err != nil {
			return fmt.Errorf("tenant %s: CA unavailable", t)
		}
	}
	if s.repl != nil {
		if err := s.repl.Ready(); err != nil {
			return err
		}
	}
	return s.ops.Store.Ping(ctx)
}
