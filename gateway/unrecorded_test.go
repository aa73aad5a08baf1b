package gateway_test

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/sluice-egress/sluice/gateway"
	"github.com/sluice-egress/sluice/incident"
	"github.com/sluice-egress/sluice/scanner"
)

// stalledSink is a store that cannot take an incident in time.
type stalledSink struct{ calls atomic.Int64 }

func (s *stalledSink) Emit(context.Context, incident.Incident) (string, error) {
	s.calls.Add(1)
	return "", errors.New("incident store: deadline exceeded")
}

// TestUnrecordableIncidentFailsClosed: when the store cannot record an
// incident, a refusal is still a refusal (without an incident id), and a
// request with a finding the gateway would forward (alert, redact) is
// refused with 503 rather than forwarded unrecorded.
func TestUnrecordableIncidentFailsClosed(t *testing.T) {
	w := newWorld(t)
	sink := &stalledSink{}
	w.gw.Events = sink
	var verdict atomic.Int32
	w.gw.Scanner = failingScanner{ScanFn: func(_ context.Context, req *scanner.Request) (*scanner.Result, error) {
		a := scanner.Action(verdict.Load())
		if a == scanner.Pass {
			return &scanner.Result{Verdict: scanner.Pass, Path: req.URL.Path}, nil
		}
		f := scanner.Finding{Kind: "secret", Rule: "test-rule", Where: "url", Snippet: "x…", Action: a}
		return &scanner.Result{Findings: []scanner.Finding{f}, Verdict: a, Reason: scanner.ReasonSecret, Path: req.URL.Path}, nil
	}}
	get := func(path string) *http.Response {
		t.Helper()
		resp, err := w.acme().Get(w.url("api.example.test", path))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}

	t.Run("refusal", func(t *testing.T) {
		resp := get("/admin")
		if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Sluice-Reason") != "path-not-allowed" ||
			resp.Header.Get("Sluice-Incident") != "" {
			t.Fatalf("%d %q incident %q, want 403 path-not-allowed without an incident",
				resp.StatusCode, resp.Header.Get("Sluice-Reason"), resp.Header.Get("Sluice-Incident"))
		}
	})
	for _, tc := range []struct {
		action scanner.Action
		status int
		reason string
	}{
		{scanner.Alert, http.StatusServiceUnavailable, gateway.ReasonIncidentStoreUnavailable},
		{scanner.Redact, http.StatusServiceUnavailable, gateway.ReasonIncidentStoreUnavailable},
		{scanner.Block, http.StatusForbidden, scanner.ReasonSecret},
	} {
		t.Run(tc.action.String(), func(t *testing.T) {
			verdict.Store(int32(tc.action))
			before, calls := len(w.up.requests()), sink.calls.Load()
			resp := get("/v1/x")
			if resp.StatusCode != tc.status || resp.Header.Get("Sluice-Reason") != tc.reason {
				t.Fatalf("%d %q, want %d %s", resp.StatusCode, resp.Header.Get("Sluice-Reason"), tc.status, tc.reason)
			}
			if n := len(w.up.requests()) - before; n != 0 {
				t.Errorf("forwarded %d requests whose finding was not recorded", n)
			}
			if sink.calls.Load() == calls {
				t.Error("no incident was even tried")
			}
		})
	}
	t.Run("no finding still passes", func(t *testing.T) {
		verdict.Store(int32(scanner.Pass))
		if resp := get("/v1/x"); resp.StatusCode != http.StatusOK {
			t.Fatalf("clean request: %d %s", resp.StatusCode, resp.Header.Get("Sluice-Reason"))
		}
	})
}

// TestUnrecordableWebSocketAlertCloses: a WebSocket message with a finding
// the gateway would pass with an alert, which the store cannot record,
// ends the WebSocket (1011) instead of going on unrecorded.
func TestUnrecordableWebSocketAlertCloses(t *testing.T) {
	w := newWSWorld(t, failingScanner{ScanFn: func(_ context.Context, req *scanner.Request) (*scanner.Result, error) {
		if req.Body == nil { // the upgrade request itself
			return &scanner.Result{Verdict: scanner.Pass, Path: req.URL.Path}, nil
		}
		f := scanner.Finding{Kind: "secret", Rule: "test-rule", Where: "body", Snippet: "x…", Action: scanner.Alert}
		return &scanner.Result{Findings: []scanner.Finding{f}, Verdict: scanner.Alert}, nil
	}})
	w.gw.Events = &stalledSink{}
	tc, br, _ := w.dial(t, "alert", "")
	writeFrame(tc, true, 0x1, []byte("a message with an alert"), true)
	if code := closeCode(t, br); code != 1011 {
		t.Fatalf("close code %d, want 1011", code)
	}
	if got := w.seen("alert").frames; len(got) != 0 {
		t.Fatalf("the upstream got %d unrecorded messages", len(got))
	}
}
