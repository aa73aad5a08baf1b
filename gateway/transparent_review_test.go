package gateway_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluice-egress/sluice/config"
	"github.com/sluice-egress/sluice/gateway"
	"github.com/sluice-egress/sluice/rules"
)

// transparentEngine compiles policy (%[1]d: the upstream's port) for w.
func transparentEngine(t *testing.T, w *transparentWorld, policy string) *rules.Engine {
	t.Helper()
	cfg, err := config.Parse(fmt.Appendf(nil, policy, w.up.port), "review.yaml")
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		t.Fatal(err)
	}
	e, err := rules.Compile(cfg.Policy(), func(tn string) (string, error) { return w.tokens[tn], nil })
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// The transparent listener holds a refused TLS connection for review like a
// CONNECT, and its plain port reaches sluice.internal.
func TestTransparentHold(t *testing.T) {
	w := newTransparentWorld(t)
	e := transparentEngine(t, w, reviewPolicy)
	desk := &fakeDesk{}
	w.gw.Policy, w.gw.Desk = e, desk
	desk.AwaitFn = func(ctx context.Context, f gateway.Filing) (gateway.Filed, error) {
		time.Sleep(100 * time.Millisecond) // the reviewer reads
		if err := e.SetGrants([]rules.Grant{{ID: "ar-1", Tenant: "acme", Entry: rules.Entry{Host: f.Host, Ports: f.Ports}}}); err != nil {
			t.Error(err)
		}
		return gateway.Filed{ID: "ar-1", State: "approved", Host: f.Host}, nil
	}
	c, err := w.tlsFrom(t, "127.0.0.1", "other.example.test", w.tenantRoots("acme"))
	if err != nil {
		t.Fatalf("held then approved: %v", err)
	}
	if resp := get(t, c, "other.example.test", "/x", nil); resp == nil || resp.StatusCode != 200 {
		t.Fatalf("held then approved: %+v", resp)
	}
	desk.mu.Lock()
	f := desk.filed[0]
	desk.mu.Unlock()
	if f.Host != "other.example.test" || len(f.Ports) != 1 || f.Ports[0] != w.up.port || f.Who.Tenant != "acme" || f.Incident == "" {
		t.Fatalf("filing %+v", f)
	}

	// Without a decision the hold ends and the refusal is answered in TLS.
	desk.AwaitFn = nil
	start := time.Now()
	c, err = w.tlsFrom(t, "127.0.0.1", "evil.example.test", w.tenantRoots("acme"))
	if err != nil {
		t.Fatalf("the refusal's handshake: %v", err)
	}
	resp := get(t, c, "evil.example.test", "/", nil)
	if resp == nil || resp.StatusCode != 403 || resp.Header.Get("Sluice-Reason") != rules.ReasonHostNotAllowed ||
		!strings.Contains(bodyOf(resp), "not decided in time") {
		t.Fatalf("after the hold: %+v", resp)
	}
	if took := time.Since(start); took < time.Second {
		t.Fatalf("refused after %s, before the hold's timeout", took)
	}

	// sluice.internal on the plain port: the sandbox files, nothing is dialled.
	pc := dialFrom(t, "127.0.0.1", w.httpAddr)
	req, _ := http.NewRequest(http.MethodPost, "http://"+gateway.InternalHost+"/v1/access-requests",
		strings.NewReader(`{"host":"docs.example.test","ports":[443],"reason":"read the docs"}`))
	req.Header.Set("Content-Type", "application/json")
	if err := req.Write(pc); err != nil {
		t.Fatal(err)
	}
	resp, err = http.ReadResponse(bufio.NewReader(pc), req)
	if err != nil || resp.StatusCode >= 300 {
		t.Fatalf("filing through the plain port: %+v %v", resp, err)
	}
	desk.mu.Lock()
	last := desk.filed[len(desk.filed)-1]
	desk.mu.Unlock()
	if last.Host != "docs.example.test" || last.Who.Tenant != "acme" {
		t.Fatalf("filing %+v", last)
	}
}

// In shadow mode the transparent listener lets a refused TLS connection
// through, inspected, and records would-block; enforce refuses it.
func TestTransparentShadow(t *testing.T) {
	w := newTransparentWorld(t)
	w.gw.Policy = transparentEngine(t, w, `
tenants:
  acme:
    token_file: acme.token
    mode: shadow
    classes:
      agent:
        allow:
          - host: api.example.test
            ports: [%[1]d]
`)
	c, err := w.tlsFrom(t, "127.0.0.1", "other.example.test", w.tenantRoots("acme"))
	if err != nil {
		t.Fatal(err)
	}
	if resp := get(t, c, "other.example.test", "/anything", nil); resp == nil || resp.StatusCode != 200 {
		t.Fatalf("shadow: %+v", resp)
	}
	w.sink.mu.Lock()
	var would int
	for _, e := range w.sink.events {
		if e.Action == gateway.ActionWouldBlock && e.Host == "other.example.test" {
			would++
		}
		if e.Action == "block" && e.Host == "other.example.test" {
			t.Errorf("shadow recorded a refusal: %+v", e)
		}
	}
	w.sink.mu.Unlock()
	if would == 0 {
		t.Fatal("no would-block incident")
	}
}
