package doctor

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// A proxy that is not Sluice, or an upstream behind a gateway that let the request
// through, can copy the gateway's refusal headers; without the proof they pass nothing.
func TestForgedRefusal(t *testing.T) {
	forger := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Sluice-Reason", "host-not-allowed")
		w.Header().Set("Sluice-Probe-Proof", strings.Repeat("0", 64))
		http.Error(w, "sluice: host-not-allowed: forged", http.StatusForbidden)
	}))
	defer forger.Close()
	u, _ := url.Parse(forger.URL)
	d := Doctor{Proxy: &url.URL{Scheme: "http", User: url.UserPassword("acme", "tok-0123456789abcdef"), Host: u.Host}, Timeout: 2 * time.Second}
	ctx := context.Background()
	for _, p := range []Probe{
		d.refusedPlain(ctx, "plain", "http://169.254.169.254/"),
		d.refused(ctx, "connect", "169.254.169.254:443"),
	} {
		if p.OK() || !strings.Contains(p.Detail, "without the gateway's proof") {
			t.Errorf("%s: %s %s", p.Name, p.Verdict, p.Detail)
		}
	}
}

func TestProven(t *testing.T) {
	for _, tc := range []struct {
		name string
		ps   []Probe
		want bool
	}{
		{"nothing proves nothing", nil, false},
		{"all pass", []Probe{{Verdict: Pass}, {Verdict: Info}}, true},
		{"inconclusive is not a pass", []Probe{{Verdict: Pass}, {Verdict: Inconclusive}}, false},
		{"the zero verdict fails", []Probe{{Verdict: Pass}, {}}, false},
	} {
		if got, _ := Proven(tc.ps); got != tc.want {
			t.Errorf("%s: %v", tc.name, got)
		}
	}
}

// A report with a probe that did not pass fails, as does one with no probe.
func TestReport(t *testing.T) {
	var b strings.Builder
	if err := Report(nil, &b); err == nil {
		t.Fatal("an empty report passed")
	}
	if got := ProxyURL("gw.example.test:3128"); got != "http://gw.example.test:3128" {
		t.Fatalf("ProxyURL = %q", got)
	}
	if got := ProxyURL("https://gw.example.test"); got != "https://gw.example.test" {
		t.Fatalf("ProxyURL = %q", got)
	}
}
