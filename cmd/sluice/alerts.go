package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/sluice-egress/sluice/alert"
	"github.com/sluice-egress/sluice/config"
	"github.com/sluice-egress/sluice/gateway"
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
	hooks, err := webhooks(s.Config, os.Getenv)
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

// webhooks resolves the configured webhooks' URLs. Errors name the reference, never
// the URL.
func webhooks(cfg *config.Config, getenv func(string) string) ([]alert.Webhook, error) {
	var out []alert.Webhook
	for i, w := range cfg.Alerts.Webhooks {
		raw, err := cfg.WebhookURL(i, getenv)
		if err != nil {
			return nil, err
		}
		name := w.Name
		if name == "" {
			name = fmt.Sprintf("webhook-%d", i)
		}
		out = append(out, alert.Webhook{Name: name, URL: raw, Format: alert.Format(w.Format), MinAction: w.MinAction, PerMinute: w.PerMinute})
	}
	return out, nil
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
