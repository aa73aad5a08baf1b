package alert

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-egress/sluice/incident"
)

// receiver is a webhook endpoint on loopback that records bodies and answers with the
// statuses in plan (then 200).
type receiver struct {
	srv *httptest.Server
	mu  sync.Mutex
	got [][]byte
	// plan is the statuses of the first requests.
	plan []int
	// hold, when set, blocks every request until it is closed.
	hold chan struct{}
}

func newReceiver(t *testing.T, plan ...int) *receiver {
	t.Helper()
	r := &receiver{plan: plan}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		if r.hold != nil {
			<-r.hold
		}
		r.mu.Lock()
		n := len(r.got)
		r.got = append(r.got, b)
		r.mu.Unlock()
		if n < len(r.plan) {
			w.WriteHeader(r.plan[n])
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) bodies() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]byte(nil), r.got...)
}

// counts records OnResult calls.
type counts struct {
	mu sync.Mutex
	m  map[string]int
}

func (c *counts) add(_, result string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]int{}
	}
	c.m[result]++
}

func (c *counts) get(result string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[result]
}

func blockIncident(id string) incident.Incident {
	return incident.Incident{ID: id, Time: time.Now(), Tenant: "acme", Class: "agent", Run: "run_1", Kind: "secret",
		Reason: "secret-detected", Action: "block", Host: "api.example.test", Port: 443, Method: "POST",
		Path: "/v1/upload", Rule: "github-pat", Where: "body", Fingerprint: "fp_abc"}
}

func closeSink(t *testing.T, s *Sink) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestRetriesOn500(t *testing.T) {
	rcv := newReceiver(t, 500, 503)
	c := &counts{}
	s := &Sink{Webhooks: []Webhook{{Name: "sec", URL: rcv.srv.URL}}, Backoff: 5 * time.Millisecond, OnResult: c.add}
	s.Alert(blockIncident("inc_1"))
	closeSink(t, s)
	if got := len(rcv.bodies()); got != 3 {
		t.Fatalf("receiver got %d requests, want 3 (two 5xx, then success)", got)
	}
	if c.get(ResultSent) != 1 || c.get(ResultFailed) != 0 {
		t.Fatalf("results %v", c.m)
	}
}

func TestGivesUp(t *testing.T) {
	tests := []struct {
		name     string
		plan     []int
		attempts int
		want     int
	}{
		{"4xx is not retried", []int{400}, 5, 1},
		{"5xx until the last attempt", []int{500, 500, 500, 500}, 3, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rcv := newReceiver(t, tc.plan...)
			c := &counts{}
			s := &Sink{Webhooks: []Webhook{{URL: rcv.srv.URL}}, MaxAttempts: tc.attempts, Backoff: time.Millisecond, OnResult: c.add}
			s.Alert(blockIncident("inc_1"))
			closeSink(t, s)
			if got := len(rcv.bodies()); got != tc.want {
				t.Fatalf("requests = %d, want %d", got, tc.want)
			}
			if c.get(ResultFailed) != 1 || c.get(ResultSent) != 0 {
				t.Fatalf("results %v", c.m)
			}
		})
	}
}

func TestRateLimitCoalesces(t *testing.T) {
	rcv := newReceiver(t)
	c := &counts{}
	s := &Sink{Webhooks: []Webhook{{URL: rcv.srv.URL, PerMinute: 2}}, OnResult: c.add}
	for i := range 10 {
		s.Alert(blockIncident("inc_" + string(rune('a'+i))))
	}
	closeSink(t, s)
	bodies := rcv.bodies()
	// Two within the rate, then one summary of the eight suppressed at close.
	if len(bodies) != 3 {
		t.Fatalf("receiver got %d alerts, want 3: %s", len(bodies), bytes.Join(bodies, []byte("\n")))
	}
	if got := c.get(ResultRateLimited); got != 8 {
		t.Fatalf("rate_limited = %d, want 8", got)
	}
	var last jsonPayload
	if err := json.Unmarshal(bodies[2], &last); err != nil {
		t.Fatal(err)
	}
	if last.Suppressed != 8 || last.Type != "sluice.suppressed" || !strings.Contains(last.Text, "8 more") {
		t.Fatalf("summary = %+v", last)
	}
}

func TestQueueFull(t *testing.T) {
	rcv := newReceiver(t)
	rcv.hold = make(chan struct{})
	c := &counts{}
	s := &Sink{Webhooks: []Webhook{{URL: rcv.srv.URL, PerMinute: 1000}}, QueueSize: 1, OnResult: c.add}
	for i := range 5 {
		s.Alert(blockIncident("inc_" + string(rune('a'+i))))
	}
	// One in flight (held), one queued, the rest dropped; how many were already taken
	// off the queue races with Alert, so at least 3 of 5 were dropped.
	if got := c.get(ResultQueueFull); got < 3 {
		t.Fatalf("queue_full = %d, want >= 3", got)
	}
	close(rcv.hold)
	closeSink(t, s)
}

func TestMinAction(t *testing.T) {
	rcv := newReceiver(t)
	s := &Sink{Webhooks: []Webhook{{URL: rcv.srv.URL}, {URL: rcv.srv.URL, MinAction: "alert", Name: "all"}}}
	in := blockIncident("inc_alert")
	in.Action = "alert"
	s.Alert(in)
	closeSink(t, s)
	if got := len(rcv.bodies()); got != 1 {
		t.Fatalf("an alert-action incident reached %d webhooks, want 1 (the min_action: alert one)", got)
	}
}

func TestPayloadHasNoSecret(t *testing.T) {
	const secret = "ghp_SECRETSECRETSECRETSECRETSECRET0123"
	const urlToken = "T0KEN-IN-WEBHOOK-URL"
	for _, f := range []Format{FormatJSON, FormatSlack} {
		t.Run(string(f), func(t *testing.T) {
			rcv := newReceiver(t, 500) // one failure, so that a retry is logged
			var logs bytes.Buffer
			s := &Sink{
				Webhooks:     []Webhook{{URL: rcv.srv.URL + "/hooks/" + urlToken, Format: f}},
				Backoff:      time.Millisecond,
				DashboardURL: "http://127.0.0.1:8080",
				Logger:       slog.New(slog.NewTextHandler(&logs, nil)),
			}
			in := blockIncident("inc_1")
			in.Path = "/v1/upload?token=" + secret + "#" + secret
			in.Host = "<!channel> api.example.test"
			// Evidence stays in the store: an alert names the incident only.
			in.Snippet, in.Decoding, in.Client = "evidence "+secret, "base64", "192.0.2.77:4242"
			in.Triage = incident.Triage{State: incident.TriageNew, Note: "note " + secret}
			s.Alert(in)
			closeSink(t, s)
			bodies := rcv.bodies()
			if len(bodies) != 2 {
				t.Fatalf("got %d requests", len(bodies))
			}
			body := string(bodies[1])
			if strings.Contains(body, secret) || strings.Contains(body, "token=") {
				t.Fatalf("payload holds the secret: %s", body)
			}
			for _, leak := range []string{"192.0.2.77", "snippet", "decoding", "triage", "base64"} {
				if strings.Contains(body, leak) {
					t.Fatalf("payload holds %q, which alerts leave out: %s", leak, body)
				}
			}
			if strings.Contains(logs.String(), urlToken) {
				t.Fatalf("log holds the webhook URL's token: %s", logs.String())
			}
			if !strings.Contains(body, "inc_1") || !strings.Contains(body, "/incidents/inc_1") {
				t.Fatalf("payload lacks the incident id or link: %s", body)
			}
			switch f {
			case FormatSlack:
				var p map[string]any
				if err := json.Unmarshal(bodies[1], &p); err != nil {
					t.Fatal(err)
				}
				if len(p) != 1 || p["text"] == nil {
					t.Fatalf("slack payload = %s, want only text", body)
				}
				if strings.Contains(p["text"].(string), "<!channel>") {
					t.Fatalf("slack markup not escaped: %s", body)
				}
			case FormatJSON:
				var p jsonPayload
				if err := json.Unmarshal(bodies[1], &p); err != nil {
					t.Fatal(err)
				}
				if p.Incident == nil || p.Incident.Path != "/v1/upload" || p.Incident.Rule != "github-pat" {
					t.Fatalf("json payload = %s", body)
				}
			}
		})
	}
}

func TestAlertAfterClose(t *testing.T) {
	rcv := newReceiver(t)
	s := &Sink{Webhooks: []Webhook{{URL: rcv.srv.URL}}}
	closeSink(t, s)
	s.Alert(blockIncident("inc_late")) // must not panic on a closed queue
	if len(rcv.bodies()) != 0 {
		t.Fatal("alert sent after Close")
	}
}
