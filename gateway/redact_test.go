package gateway_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/sluice-egress/sluice/gateway"
	"github.com/sluice-egress/sluice/scanner"
)

// lockedBuffer is a log destination safe for the gateway's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestRefusalsKeepNoTokens: a refused request is not scanned, yet its path
// and host are kept as evidence; what looks like a token in them (a UUID, a
// 40-hex value, a token-shaped label of a malformed host, a token only the
// rules recognise) reaches neither the incident nor the log.
func TestRefusalsKeepNoTokens(t *testing.T) {
	w := newWorldWith(t, func(g *gateway.Gateway) { g.Scanner = &scanner.Scanner{} })
	logs := &lockedBuffer{}
	w.gw.Logger = slog.New(slog.NewTextHandler(logs, nil))
	uuid := "550e8400-e29b-41d4-a716-446655440000"
	hex40 := "da39a3ee5e6b4b0d3255bfef95601890afd80709"
	label := "tok_k9XqT2mZ7vLp4RwA8sJd"
	// A token of one case without a digit has no shape RedactPath knows:
	// only the rules recognise it.
	pat := "ghp_" + fakeLower(36)

	c := w.acme()
	for _, p := range []string{"/admin/" + uuid, "/hooks/" + hex40 + "/send", "/repos/" + pat + "/contents"} {
		resp, err := c.Get(w.url("api.example.test", p))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("GET %s: status %d, want 403", p, resp.StatusCode)
		}
	}
	for _, authority := range []string{label + ".evil.test:443", fmt.Sprintf("%s.evil.test:%d", label, w.up.port)} {
		_, resp := w.connect("acme", w.tokens["acme"], authority)
		if resp == nil || resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("CONNECT %s: %v, want 400", authority, resp)
		}
	}
	// A valid name whose label is a token as DNS spells one ('-' for '_',
	// one case): denied, and no shape RedactHost knows.
	dnsLabel := "ghp-" + fakeLower(36)
	if _, resp := w.connect("acme", w.tokens["acme"], dnsLabel+".evil.test:443"); resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("CONNECT to a denied host: %v, want 403", resp)
	}

	w.sink.mu.Lock()
	events := fmt.Sprintf("%+v", w.sink.events)
	n := len(w.sink.events)
	w.sink.mu.Unlock()
	if n < 6 {
		t.Fatalf("%d events, want 6", n)
	}
	for _, secret := range []string{uuid, hex40, label, pat, dnsLabel} {
		if strings.Contains(events, secret) {
			t.Errorf("an incident keeps %q: %s", secret, events)
		}
		if strings.Contains(logs.String(), secret) {
			t.Errorf("the log keeps %q", secret)
		}
	}
	if !strings.Contains(events, "{redacted}.evil.test") || !strings.Contains(events, "/admin/{redacted}") {
		t.Errorf("the redacted host or path lost its shape: %s", events)
	}
}

// fakeLower is n random lower-case letters.
func fakeLower(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + rand.IntN(26))
	}
	return string(b)
}

// observations records what the gateway observed.
type observations struct {
	mu  sync.Mutex
	obs []gateway.Observation
}

func (o *observations) Observe(ob gateway.Observation) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.obs = append(o.obs, ob)
}

// TestPassedURLSecretsAreNotKept: a secret in the URL that the policy lets
// through (alert, pass) is forwarded as the operator chose, but neither the
// observation of what the run reached nor the alert's incident keeps it: a
// record is kept where the secret does not belong. The token is of one
// case without a digit, a shape RedactPath alone lets through.
func TestPassedURLSecretsAreNotKept(t *testing.T) {
	for _, action := range []scanner.Action{scanner.Alert, scanner.Pass} {
		t.Run(action.String(), func(t *testing.T) {
			obs := &observations{}
			w := newWorldWith(t, func(g *gateway.Gateway) {
				g.Scanner = &scanner.Scanner{Policy: scanner.Policy{Actions: map[string]scanner.Action{"github-pat": action}}}
				g.Observer = obs
			})
			pat := "ghp_" + fakeLower(36)
			resp, err := w.acme().Get(w.url("other.example.test", "/hooks/"+pat+"/x"))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d, want 200: the policy lets the secret pass", resp.StatusCode)
			}
			obs.mu.Lock()
			seen := fmt.Sprintf("%+v", obs.obs)
			n := len(obs.obs)
			obs.mu.Unlock()
			w.sink.mu.Lock()
			events := fmt.Sprintf("%+v", w.sink.events)
			w.sink.mu.Unlock()
			if n == 0 || !strings.Contains(seen, "/hooks/") {
				t.Fatalf("the request was not observed: %s", seen)
			}
			if strings.Contains(seen, pat) {
				t.Errorf("the observation keeps the secret: %s", seen)
			}
			if strings.Contains(events, pat) {
				t.Errorf("an incident keeps the secret: %s", events)
			}
			if action == scanner.Alert && !strings.Contains(events, "github-pat") {
				t.Errorf("no alert recorded: %s", events)
			}
		})
	}
}
