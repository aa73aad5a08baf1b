package main

import (
	"context"
	"os"
	"time"

	"github.com/sluice-egress/sluice/alert"
	"github.com/sluice-egress/sluice/gateway"
	"github.com/sluice-egress/sluice/internal/operatorconf"
)

// withAlerts wraps the store's sink with the alert sink, when there is one.
func (s *Server) withAlerts(sink gateway.EventSink) gateway.EventSink {
	if s.alerts == nil {
		return sink
	}
	return &alert.Recorded{Inner: sink, Alerts: s.alerts}
}

// openAlerts builds the webhook sink of alerts.webhooks, reading each URL from its
// env var or file. A webhook whose URL cannot be read is a start-up error: alerts the
// operator configured must not silently go nowhere.
func (s *Server) openAlerts() error {
	ac := s.Config.Alerts
	if len(ac.Webhooks) == 0 {
		return nil
	}
	hooks, err := operatorconf.Webhooks(s.Config, os.Getenv)
	if err != nil {
		return err
	}
	s.alerts = &alert.Sink{
		Webhooks:     hooks,
		DashboardURL: ac.DashboardURL,
		OnResult:     s.metrics.AlertResult,
		Logger:       s.Logger,
	}
	return nil
}

// closeAlerts delivers the queued alerts for a few seconds, then gives up.
func (s *Server) closeAlerts() {
	if s.alerts == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.alerts.Close(ctx); err != nil {
		s.Logger.Warn("alerts: not all delivered before shutdown", "err", err)
	}
}
