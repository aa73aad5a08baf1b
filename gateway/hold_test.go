package gateway_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-egress/sluice/config"
	"github.com/sluice-egress/sluice/gateway"
	"github.com/sluice-egress/sluice/rules"
	"github.com/sluice-egress/sluice/scanner"
)

// reviewPolicy: acme's agent class holds refusals for a second; globex runs
// in shadow. %[1]d is the trusted upstream's port.
const reviewPolicy = `
tenants:
  acme:
    token_file: acme.token
    classes:
      agent:
        on_deny: hold
        hold_timeout: 1s
        allow:
          - host: api.example.test
            ports: [%[1]d]
            paths: ["/v1/"]
  globex:
    token_file: globex.token
    mode: shadow
    classes:
      agent: {}
`

// reviewWorld is the world with reviewPolicy in force and a fake desk.
func reviewWorld(t *testing.T) (*world, *rules.Engine, *fakeDesk) {
	t.Helper()
	w := newWorld(t)
	cfg, err := config.Parse(fmt.Appendf(nil, reviewPolicy, w.up.port), "review.yaml")
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
	desk := &fakeDesk{}
	w.gw.Policy, w.gw.Desk, w.gw.RefuseInTLS = e, desk, true
	return w, e, desk
}

func timedGet(t *testing.T, c *http.Client, u string) (int, string, time.Duration) {
	t.Helper()
	start := time.Now()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, string(b), time.Since(start)
}

// A held CONNECT proceeds once the reviewer approves; the filing names
// exactly the host and port, as the run of the credentials.
func TestHoldApproved(t *testing.T) {
	w, e, desk := reviewWorld(t)
	desk.AwaitFn = func(ctx context.Context, f gateway.Filing) (gateway.Filed, error) {
		time.Sleep(100 * time.Millisecond) // the reviewer reads
		if err := e.SetGrants([]rules.Grant{{ID: "ar-1", Tenant: "acme", Entry: rules.Entry{Host: f.Host, Ports: f.Ports, Methods: f.Methods, Paths: f.Paths}}}); err != nil {
			t.Error(err)
		}
		return gateway.Filed{ID: "ar-1", State: "approved", Host: f.Host}, nil
	}
	code, body, _ := timedGet(t, w.acme(), w.url("other.example.test", "/x"))
	if code != 200 {
		t.Fatalf("held then approved: %d %s", code, body)
	}
	desk.mu.Lock()
	f := desk.filed[0]
	desk.mu.Unlock()
	if f.Host != "other.example.test" || len(f.Ports) != 1 || f.Ports[0] != w.up.port || f.Who.Tenant != "acme" || f.Incident == "" || len(f.Methods) != 0 {
		t.Fatalf("filing %+v", f)
	}
	if !w.sink.has(rules.ReasonHostNotAllowed) {
		t.Fatal("the hold was not recorded")
	}
	// A request refused inside an open tunnel is held as well: method and
	// path are part of what is asked.
	desk.mu.Lock()
	desk.filed = nil
	desk.mu.Unlock()
	desk.AwaitFn = func(ctx context.Context, f gateway.Filing) (gateway.Filed, error) {
		e.SetGrants([]rules.Grant{{ID: "ar-2", Tenant: "acme", Entry: rules.Entry{Host: f.Host, Ports: f.Ports, Methods: f.Methods, Paths: f.Paths}}})
		return gateway.Filed{ID: "ar-2", State: "approved"}, nil
	}
	if code, body, _ := timedGet(t, w.acme(), w.url("api.example.test", "/v2/items")); code != 200 {
		t.Fatalf("held request: %d %s", code, body)
	}
	desk.mu.Lock()
	f = desk.filed[0]
	desk.mu.Unlock()
	if len(f.Methods) != 1 || f.Methods[0] != "GET" || len(f.Paths) != 1 || f.Paths[0] != "/v2/items" {
		t.Fatalf("request filing %+v", f)
	}
}

// A held request's filing is stored and shown to reviewers: a token in its
// path or host is not in it. The path asked for stops before the token,
// as a prefix a grant can match; a host label that holds data is masked.
func TestHoldFilingKeepsNoSecret(t *testing.T) {
	w, _, desk := reviewWorld(t)
	w.gw.Scanner = &scanner.Scanner{}
	desk.AwaitFn = func(ctx context.Context, f gateway.Filing) (gateway.Filed, error) {
		return gateway.Filed{ID: "ar-1", State: "denied"}, nil
	}
	pat := "ghp_" + fakeLower(36) // one case, no digit: only the rules know it
	if code, _, _ := timedGet(t, w.acme(), w.url("api.example.test", "/v2/hooks/"+pat+"/send")); code != http.StatusForbidden {
		t.Fatalf("held and denied: %d", code)
	}
	label := "ghp-" + fakeLower(36)
	if code, _, _ := timedGet(t, w.acme(), w.url(label+".evil.test", "/")); code != http.StatusForbidden {
		t.Fatalf("held and denied CONNECT: %d", code) // refused inside TLS (RefuseInTLS)
	}
	desk.mu.Lock()
	filed := fmt.Sprintf("%+v", desk.filed)
	n := len(desk.filed)
	desk.mu.Unlock()
	if n != 2 {
		t.Fatalf("%d filings, want 2: %s", n, filed)
	}
	for _, secret := range []string{pat, label} {
		if strings.Contains(filed, secret) {
			t.Errorf("a filing keeps %q: %s", secret, filed)
		}
	}
	if !strings.Contains(filed, "Paths:[/v2/hooks/]") || !strings.Contains(filed, "Host:{redacted}.evil.test") {
		t.Errorf("the filings lost what they ask for: %s", filed)
	}
}

// A denial answers at once with the reviewer's note; no decision within
// the hold answers at its end; the run's end lets its holds go at once.
func TestHoldDeniedTimeoutReleased(t *testing.T) {
	w, e, desk := reviewWorld(t)
	desk.AwaitFn = func(ctx context.Context, f gateway.Filing) (gateway.Filed, error) {
		return gateway.Filed{ID: "ar-9", State: "denied", Note: "use the mirror"}, nil
	}
	code, body, took := timedGet(t, w.acme(), w.url("other.example.test", "/"))
	if code != 403 || !strings.Contains(body, `denied as ar-9: "use the mirror"`) || took > 500*time.Millisecond {
		t.Fatalf("denied: %d after %s: %s", code, took, body)
	}
	desk.AwaitFn = nil // nobody decides
	code, body, took = timedGet(t, w.acme(), w.url("other.example.test", "/"))
	if code != 403 || !strings.Contains(body, "not decided in time") || took < time.Second || took > 3*time.Second {
		t.Fatalf("timeout: %d after %s: %s", code, took, body)
	}
	// Released by the run's end.
	tok := randomToken(t)
	if err := e.AddRun(rules.Run{ID: "r-held", Tenant: "acme", Class: "agent", TokenHash: rules.HashToken(tok)}); err != nil {
		t.Fatal(err)
	}
	go func() {
		for w.gw.HeldConnections() == 0 {
			time.Sleep(10 * time.Millisecond)
		}
		w.gw.CloseRun("r-held")
	}()
	code, body, took = timedGet(t, w.client("acme", tok, w.tenantRoots("acme")), w.url("other.example.test", "/"))
	if code != 403 || !strings.Contains(body, "until the run ended") || took > 900*time.Millisecond {
		t.Fatalf("released: %d after %s: %s", code, took, body)
	}
	if n := w.gw.HeldConnections(); n != 0 {
		t.Fatalf("%d holds left", n)
	}
	w.noDials(t)
}

// Held connections are bounded: past MaxHolds a refusal is answered at once.
func TestHoldBounded(t *testing.T) {
	w, _, _ := reviewWorld(t)
	w.gw.MaxHolds = 1
	go func() {
		if resp, err := w.acme().Get(w.url("other.example.test", "/a")); err == nil {
			resp.Body.Close()
		}
	}()
	for w.gw.HeldConnections() == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	code, body, took := timedGet(t, w.acme(), w.url("other.example.test", "/b"))
	if code != 403 || !strings.Contains(body, "not held") || took > 500*time.Millisecond {
		t.Fatalf("past the bound: %d after %s: %s", code, took, body)
	}
}

// Shadow mode forwards what enforce refuses, recorded as would-block; the
// address guard is never in shadow.
func TestShadowMode(t *testing.T) {
	w, _, _ := reviewWorld(t)
	globex := w.client("globex", w.tokens["globex"], w.tenantRoots("globex"))
	code, body, _ := timedGet(t, globex, w.url("api.example.test", "/anything"))
	if code != 200 {
		t.Fatalf("shadow: %d %s", code, body)
	}
	var would int
	w.sink.mu.Lock()
	for _, e := range w.sink.events {
		if e.Action == gateway.ActionWouldBlock && e.Tenant == "globex" {
			would++
		}
		if e.Action == "block" {
			t.Errorf("shadow recorded a refusal: %+v", e)
		}
	}
	w.sink.mu.Unlock()
	if would == 0 {
		t.Fatal("no would-block incident")
	}
	code, body, _ = timedGet(t, globex, w.url("private.example.test", "/"))
	if code != 403 || !strings.Contains(body, gateway.ReasonAddressNotAllowed) {
		t.Fatalf("a private address in shadow: %d %s", code, body)
	}
}

// Over HTTP/2 a refused stream is held on its own: the other streams of the
// connection go on meanwhile, and the held one proceeds once approved.
func TestHoldH2Stream(t *testing.T) {
	w, e, desk := reviewWorld(t)
	release := make(chan struct{})
	desk.AwaitFn = func(ctx context.Context, f gateway.Filing) (gateway.Filed, error) {
		<-release
		e.SetGrants([]rules.Grant{{ID: "ar-1", Tenant: "acme", Entry: rules.Entry{Host: f.Host, Ports: f.Ports, Methods: f.Methods, Paths: f.Paths}}})
		return gateway.Filed{ID: "ar-1", State: "approved"}, nil
	}
	authority := net.JoinHostPort("api.example.test", strconv.Itoa(w.up.port))
	cc := w.h2Tunnel(t, authority, "api.example.test")
	held := make(chan string, 1)
	go func() {
		code, reason, body, err := h2Get(t, cc, authority, "/v2/items")
		held <- fmt.Sprint(code, " ", reason, " ", body, " ", err)
	}()
	waitFor(t, func() bool { return w.gw.HeldConnections() == 1 })
	if code, _, body, err := h2Get(t, cc, authority, "/v1/meanwhile"); err != nil || code != 200 {
		t.Fatalf("a stream beside the held one: %d %q %v", code, body, err)
	}
	close(release)
	if got := <-held; !strings.HasPrefix(got, "200 ") {
		t.Fatalf("held stream after approval: %s", got)
	}
}

// A held request's body is read after the hold: the hold does not count
// against its BodyReadTimeout.
func TestHoldKeepsBodyTime(t *testing.T) {
	w, e, desk := reviewWorld(t)
	w.gw.Limits.BodyReadTimeout = time.Second
	approved := make(chan struct{})
	desk.AwaitFn = func(ctx context.Context, f gateway.Filing) (gateway.Filed, error) {
		time.Sleep(1500 * time.Millisecond) // longer than the body's time
		e.SetGrants([]rules.Grant{{ID: "ar-1", Tenant: "acme", Entry: rules.Entry{Host: f.Host, Ports: f.Ports, Methods: f.Methods, Paths: f.Paths}}})
		close(approved)
		return gateway.Filed{ID: "ar-1", State: "approved"}, nil
	}
	// The body's second half is sent only once the hold is approved: its
	// time must count from the approval, not from the request's start.
	pr, pw := io.Pipe()
	go func() {
		pw.Write([]byte(strings.Repeat("a", 16<<10)))
		<-approved
		time.Sleep(300 * time.Millisecond) // nothing of it waits in a buffer
		pw.Write([]byte(strings.Repeat("b", 16<<10)))
		pw.Close()
	}()
	resp, err := w.acme().Post(w.url("api.example.test", "/v2/items"), "text/plain", pr)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("held POST after approval: %d %s", resp.StatusCode, body)
	}
}
