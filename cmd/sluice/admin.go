package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-egress/sluice/dashboard"
	"github.com/sluice-egress/sluice/gateway"
	"github.com/sluice-egress/sluice/internal/incidentsink"
	"github.com/sluice-egress/sluice/rules"
	"github.com/sluice-egress/sluice/store"
)

// ops is what serve runs beside the proxy: the incident store and its
// writer, retention, the metrics and the admin listener (health, metrics,
// and the dashboard when it mounts there).
type ops struct {
	store   *store.Store
	writer  *store.Writer
	metrics *dashboard.Metrics
	adminLn net.Listener
	admin   *http.Server

	draining  atomic.Bool
	stop      context.CancelFunc // ends retention
	done      sync.WaitGroup
	closeOnce sync.Once
}

// openStore opens the incident store (DataDir/sluice.db, or PostgreSQL), the batching
// writer behind the gateway's EventSink and the metrics. A store that cannot
// be opened is a start-up error: nothing is served unrecorded.
func (s *Server) openStore() error {
	st, err := openDatabase(context.Background(), s.Config)
	if err != nil {
		return fmt.Errorf("incident store: %w", err)
	}
	o := &s.ops
	o.store = st
	o.metrics = dashboard.NewMetrics(dashboard.MetricsOptions{
		OpenTunnels: func() int {
			if s.gw == nil {
				return 0
			}
			return s.gw.OpenTunnels()
		},
		QueueDepth: func() int { return o.writer.Depth() },
	})
	o.writer = &store.Writer{Store: st, Logger: s.Logger, OnBatch: o.metrics.ObserveBatch}
	s.cas.OnLeaf = o.metrics.ObserveLeaf
	// Incidents the store could not take in time: each one refused a
	// request (fail closed), so an operator must see them rise.
	unrecorded := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "sluice_incidents_unrecorded_total",
		Help: "Incidents the store could not commit in time; the requests they belonged to were refused.",
	})
	o.metrics.Registry.MustRegister(unrecorded)
	s.events = &incidentsink.Sink{Writer: o.writer, Metrics: o.metrics, Logger: s.Logger, OnUnrecorded: unrecorded.Inc,
		Timeout: time.Duration(s.Config.Store.IncidentTimeout)}
	return nil
}

// countBytes wraps the upstream dialer so that the metrics count the bytes
// on every upstream connection.
func (s *Server) countBytes(d gateway.Dialer) gateway.Dialer {
	return &gateway.CountingDialer{Dialer: d, Sent: s.ops.metrics.AddSent, Received: s.ops.metrics.AddReceived}
}

// openAdmin binds the admin listener and hooks the policy reloads into the
// metrics.
func (s *Server) openAdmin() error {
	o := &s.ops
	if s.watch != nil {
		if prev := s.watch.OnResult; prev != nil {
			s.watch.OnResult = func(ok bool) { o.metrics.PolicyReload(ok); prev(ok) }
		} else {
			s.watch.OnResult = o.metrics.PolicyReload
		}
	}
	ln, err := net.Listen("tcp", s.Config.Listen.Admin)
	if err != nil {
		return fmt.Errorf("admin listener: %w (change listen.admin or --admin)", err)
	}
	users, err := dashboardUsers(s.Config, os.Getenv)
	if err != nil {
		ln.Close()
		return err
	}
	o.adminLn = ln
	o.admin = &http.Server{
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
		Metrics: s.ops.metrics, Ready: s.ready, Logger: s.Logger,
		Store:      s.ops.store,
		Engine:     engine,
		Users:      users,
		Identify:   func(user, token string) (rules.Identity, error) { return s.policy.Identify(user, token) },
		SessionTTL: time.Duration(s.Config.Dashboard.SessionTTL),
		Runs:       s.runs,
	}
}

// AdminAddr is the bound admin address (useful with port 0).
func (s *Server) AdminAddr() string { return s.ops.adminLn.Addr().String() }

// ready is /readyz: the policy, every tenant's CA and the store answer, and
// the gateway is not shutting down.
func (s *Server) ready(ctx context.Context) error {
	if s.ops.draining.Load() {
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
	return s.ops.store.Ping(ctx)
}

// serveOps starts the admin listener and the retention loop.
func (s *Server) serveOps(ctx context.Context) {
	o := &s.ops
	rctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	o.stop = stop
	ret := &store.Retention{Store: o.store, MaxAge: time.Duration(s.Config.Store.Retention), Logger: s.Logger}
	o.done.Go(func() { ret.Run(rctx) })
	o.done.Go(func() {
		if err := o.admin.Serve(o.adminLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.Logger.Error("admin listener", "err", err)
		}
	})
}

// closeOps drains the incident writer (every incident already handed to it
// is committed), then stops the admin listener and closes the store. Call it
// after the proxy has stopped; it is safe to call twice.
func (s *Server) closeOps(ctx context.Context) {
	o := &s.ops
	o.draining.Store(true)
	o.closeOnce.Do(func() {
		if o.writer != nil {
			wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			if err := o.writer.Close(wctx); err != nil {
				s.Logger.Error("incident writer: not drained", "queued", o.writer.Depth(), "err", err)
			}
			cancel()
		}
		if o.admin != nil {
			actx, cancel := context.WithTimeout(ctx, 2*time.Second)
			o.admin.Shutdown(actx)
			cancel()
		}
		if o.adminLn != nil {
			o.adminLn.Close() // never served when Open failed after binding it
		}
		if o.stop != nil {
			o.stop()
		}
		o.done.Wait()
		if o.store != nil {
			if err := o.store.Close(); err != nil {
				s.Logger.Error("incident store: close", "err", err)
			}
		}
	})
}
