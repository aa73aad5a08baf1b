package dashboard

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func scrape(t *testing.T, h http.Handler) string {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("/metrics: %d", rec.Code)
	}
	return rec.Body.String()
}

func TestMetricsMove(t *testing.T) {
	tunnels, parked, depth, reused := 3, 2, 7, uint64(41)
	m := NewMetrics(MetricsOptions{OpenTunnels: func() int { return tunnels }, ParkedTunnels: func() int { return parked },
		QueueDepth: func() int { return depth }, TextsNotRescanned: func() uint64 { return reused }})
	h := NewRouter(Options{Metrics: m})

	m.Event("acme", "host-not-allowed", "block", "")
	m.Event("acme", "host-not-allowed", "block", "")
	m.Event("", "proxy-auth-required", "block", "")
	m.Event("acme", "secret-detected", "block", "github-pat")
	m.AddSent(100)
	m.AddReceived(2000)
	m.ObserveScan(3 * time.Millisecond)
	m.ObserveLeaf("acme", false, 200*time.Microsecond)
	m.ObserveLeaf("acme", true, 0)
	m.ObserveLeaf("acme", true, 0)
	m.ObserveBatch(12, 2*time.Millisecond, nil)
	m.ObserveBatch(1, time.Millisecond, errors.New("disk full"))
	m.PolicyReload(true)
	m.PolicyReload(false)

	body := scrape(t, h)
	for _, want := range []string{
		`sluice_decisions_total{action="block",reason="host-not-allowed",tenant="acme"} 2`,
		`sluice_decisions_total{action="block",reason="proxy-auth-required",tenant="none"} 1`,
		`sluice_findings_total{action="block",rule="github-pat"} 1`,
		`sluice_upstream_bytes_total{direction="sent"} 100`,
		`sluice_upstream_bytes_total{direction="received"} 2000`,
		`sluice_scan_duration_seconds_count 1`,
		`sluice_leaf_cache_total{result="hit"} 2`,
		`sluice_leaf_cache_total{result="miss"} 1`,
		`sluice_leaf_issue_seconds_count 1`,
		`sluice_store_batch_seconds_count 2`,
		`sluice_store_batch_incidents_sum 13`,
		`sluice_store_batch_errors_total 1`,
		`sluice_policy_reloads_total{result="ok"} 1`,
		`sluice_policy_reloads_total{result="error"} 1`,
		`sluice_tunnels_open 3`,
		`sluice_tunnels_parked 2`,
		`sluice_store_queue_depth 7`,
		`sluice_scan_texts_not_rescanned_total 41`,
		`go_goroutines `,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	tunnels, parked, depth = 0, 0, 0
	body = scrape(t, h)
	if !strings.Contains(body, "sluice_tunnels_open 0") || !strings.Contains(body, "sluice_tunnels_parked 0") ||
		!strings.Contains(body, "sluice_store_queue_depth 0") {
		t.Error("gauges are not read at scrape time")
	}
}

// TestNoHostPathOrTokenInLabels feeds the metrics values that must never
// become labels and checks that none reaches the scrape.
func TestNoHostPathOrTokenInLabels(t *testing.T) {
	m := NewMetrics(MetricsOptions{})
	token := "ghp_" + strings.Repeat("A1b2", 9)
	bad := []string{
		"evil.example.test:443", "/v1/secret/path", token, "Bearer " + token, "tenant with spaces",
		"UPPER", strings.Repeat("a", 65), "acme\n", `x"} 1`, "",
	}
	for _, v := range bad {
		m.Event(v, v, v, v)
	}
	// A real rule id, reason and tenant pass through.
	m.Event("acme", "secret-detected", "redact", "aws-access-key-id")
	body := scrape(t, NewRouter(Options{Metrics: m}))
	for _, v := range bad[:len(bad)-1] {
		if strings.Contains(body, `"`+v+`"`) {
			t.Errorf("label value %q reached /metrics", v)
		}
	}
	for _, leak := range []string{"example.test", "/v1/", token[:12], "Bearer"} {
		if strings.Contains(body, leak) {
			t.Errorf("/metrics contains %q", leak)
		}
	}
	for _, want := range []string{
		`sluice_decisions_total{action="other",reason="other",tenant="other"} 9`,
		`sluice_decisions_total{action="other",reason="other",tenant="none"} 1`,
		`sluice_findings_total{action="redact",rule="aws-access-key-id"} 1`,
		`sluice_decisions_total{action="redact",reason="secret-detected",tenant="acme"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

func TestHealthAndReadiness(t *testing.T) {
	var readyErr error
	h := NewRouter(Options{Ready: func(context.Context) error { return readyErr },
		Logger: slog.New(slog.DiscardHandler)})
	get := func(path string) (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		b, _ := io.ReadAll(rec.Body)
		if rec.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: no nosniff", path)
		}
		return rec.Code, string(b)
	}
	tests := []struct {
		name     string
		err      error
		path     string
		wantCode int
		wantBody string
	}{
		{"alive", nil, "/healthz", 200, "ok"},
		{"ready", nil, "/readyz", 200, "ready"},
		{"not ready", errors.New("store: ping: closed"), "/readyz", 503, "not ready: store: ping: closed"},
		{"alive while not ready", errors.New("x"), "/healthz", 200, "ok"},
		{"no metrics configured", nil, "/metrics", 404, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			readyErr = tc.err
			code, body := get(tc.path)
			if code != tc.wantCode || !strings.Contains(body, tc.wantBody) {
				t.Fatalf("%s: %d %q", tc.path, code, body)
			}
		})
	}
}

func TestAlertResult(t *testing.T) {
	m := NewMetrics(MetricsOptions{})
	alerts := func() (series int, sent float64) {
		fams, err := m.Registry.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fams {
			if f.GetName() != "sluice_alerts_total" {
				continue
			}
			for _, mt := range f.GetMetric() {
				series++
				sent += mt.GetCounter().GetValue()
			}
		}
		return series, sent
	}
	if n, _ := alerts(); n != 0 {
		t.Fatalf("%d alert series before any alert", n)
	}
	m.AlertResult("sec", "sent")
	m.AlertResult("sec", "sent")
	if n, sent := alerts(); n != 1 || sent != 2 {
		t.Fatalf("%d series, %v sent; want 1 and 2", n, sent)
	}
}
