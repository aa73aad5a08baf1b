package e2e

import (
	"context"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/sluice-egress/sluice/config"
	"github.com/sluice-egress/sluice/internal/testnet"
	"github.com/sluice-egress/sluice/rules"
)

// reviewAddr serves the review loop's upstreams.
var reviewAddr = netip.MustParseAddr("198.51.100.31")

// reviewConfig: class agent holds refusals for 3s; plain refuses at once;
// shadowed runs in shadow mode. loop.example.test resolves to loopback,
// which the address guard refuses in every mode.
const reviewConfig = `
version: 1
listen:
  proxy: 192.0.2.1:3128
  admin: 127.0.0.1:8080
data_dir: data
upstream:
  extra_roots: [upstream-ca.pem]
  hosts:
    held.example.test: 198.51.100.31
    docs.example.test: 198.51.100.31
    other.example.test: 198.51.100.31
    loop.example.test: 127.0.0.1
review:
  refuse_in_tls: true
  request_burst: 3
  request_every: 1h
dashboard:
  users:
    - {name: rev, role: reviewer, password_hash_file: rev.hash}
tenants:
  acme:
    token_file: acme.token
    token_classes: [agent, plain, shadowed]
    classes:
      agent:
        on_deny: hold
        hold_timeout: 3s
        allow:
          - host: docs.example.test
            methods: [GET]
      plain:
        allow:
          - host: docs.example.test
            methods: [GET]
      shadowed:
        mode: shadow
`

func startReview(t *testing.T) *apiEnv {
	e := &apiEnv{fixture: newFixture(t, reviewConfig, "acme")}
	e.w.AddUpstreamAddr(t, reviewAddr)
	e.w.ServeUpstream(t, testnet.HostPort(reviewAddr, 443), e.upCA.ServerTLS(t, "held.example.test", "docs.example.test", "other.example.test"), nil)
	h, err := bcrypt.GenerateFromPassword([]byte(reviewerPassword), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(e.dir, "rev.hash"), string(h)+"\n", 0o600)
	e.admin = e.w.Gateway.HTTPClient(nil, nil)
	e.serve(t, "1s")
	return e
}

// newRun creates a run of class agent through the API.
func (e *apiEnv) newRun(t *testing.T, class string) (e2eRun, *x509.CertPool) {
	t.Helper()
	var r e2eRun
	if code := e.api(t, "tenant", "POST", "/api/runs", map[string]any{"tenant": "acme", "class": class, "ttl": "1h"}, &r); code != 201 {
		t.Fatalf("create run: %d", code)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM([]byte(r.CAPEM)) {
		t.Fatal("ca_pem holds no certificate")
	}
	return r, roots
}

type pending struct {
	ID, Host, State, Justification string
}

// waitPending polls the API as the reviewer until a pending request for host
// appears that is not in seen.
func (e *apiEnv) waitPending(t *testing.T, host string, seen map[string]bool) pending {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		var out struct{ Requests []pending }
		e.api(t, "rev", "GET", "/api/access-requests?state=pending", nil, &out)
		for _, x := range out.Requests {
			if x.Host == host && !seen[x.ID] {
				seen[x.ID] = true
				return x
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no pending request for %s", host)
	return pending{}
}

type result struct {
	code int
	body string
	at   time.Time
	err  error
}

func goGet(c *http.Client, u string) chan result {
	ch := make(chan result, 1)
	go func() {
		resp, err := c.Get(u)
		if err != nil {
			ch <- result{err: err, at: time.Now()}
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		ch <- result{code: resp.StatusCode, body: string(b), at: time.Now()}
	}()
	return ch
}

// TestReviewLoop drives the review loop through the real binary: an agent
// held on a denied host is let through by a reviewer's run-scoped approval
// while it waits, another run stays refused; denial and timeout answer at
// once; a sandbox files requests through sluice.internal, only as itself,
// and not without limit; shadow mode forwards what enforce refuses while
// the address guard still refuses; and the policy drafted from the day's
// traffic accepts what it saw.
func TestReviewLoop(t *testing.T) {
	e := startReview(t)
	seen := map[string]bool{}
	runA, roots := e.newRun(t, "agent")
	runB, _ := e.newRun(t, "agent")
	clientA := e.sandboxClient(t, "acme", runA.Token, roots)
	clientB := e.sandboxClient(t, "acme", runB.Token, roots)

	t.Run("held then approved for this run", func(t *testing.T) {
		ch := goGet(clientA, "https://held.example.test/pkg")
		x := e.waitPending(t, "held.example.test", seen)
		time.Sleep(300 * time.Millisecond) // it is held, not answered
		select {
		case r := <-ch:
			t.Fatalf("answered before the decision: %+v", r)
		default:
		}
		approved := time.Now()
		if code := e.api(t, "rev", "POST", "/api/access-requests/"+x.ID+"/review",
			map[string]any{"approve": true, "scope": "run", "ttl": "1h", "note": "docs mirror"}, nil); code != 200 {
			t.Fatalf("approve: %d", code)
		}
		r := <-ch
		if r.err != nil || r.code != 200 || r.at.Sub(approved) > time.Second {
			t.Fatalf("held request after approval: %+v (%s after the approval)", r, r.at.Sub(approved))
		}
		// Run-scoped: another run is held and refused, not let through.
		ch = goGet(clientB, "https://held.example.test/pkg")
		xb := e.waitPending(t, "held.example.test", seen)
		denied := time.Now()
		if code := e.api(t, "rev", "POST", "/api/access-requests/"+xb.ID+"/review",
			map[string]any{"approve": false, "note": "not for this run"}, nil); code != 200 {
			t.Fatalf("deny: %d", code)
		}
		r = <-ch
		if r.err != nil || r.code != 403 || !strings.Contains(r.body, `"not for this run"`) || r.at.Sub(denied) > time.Second {
			t.Fatalf("denied request: %+v (%s after the denial)", r, r.at.Sub(denied))
		}
	})

	t.Run("timeout answers at the hold's end", func(t *testing.T) {
		start := time.Now()
		r := <-goGet(clientB, "https://other.example.test/")
		took := time.Since(start)
		if r.err != nil || r.code != 403 || !strings.Contains(r.body, "not decided in time") || took < 3*time.Second || took > 4500*time.Millisecond {
			t.Fatalf("timeout: %+v after %s", r, took)
		}
	})

	t.Run("curl shows the refusal and how to ask", func(t *testing.T) {
		ca := filepath.Join(e.dir, "run-ca.pem")
		mustWrite(t, ca, runA.CAPEM, 0o644)
		proxy := (&url.URL{Scheme: "http", User: url.UserPassword("acme/plain", e.token), Host: proxyAddr}).String()
		env := []string{"HTTPS_PROXY=" + proxy, "https_proxy=" + proxy, "HTTP_PROXY=" + proxy, "http_proxy=" + proxy, "SSL_CERT_FILE=" + ca, "CURL_CA_BUNDLE=" + ca}
		code, connect, reason, body := e.sandboxCurl(t, env, "https://evil.example.test/upload")
		if code != "403" || connect != "200" || reason != "host-not-allowed" {
			t.Fatalf("curl: %s (CONNECT %s) %q\n%s", code, connect, reason, body)
		}
		for _, want := range []string{"sluice: host-not-allowed: ", "refused: CONNECT evil.example.test:443",
			"policy: tenant acme, class plain", "ask: POST http://sluice.internal/v1/access-requests"} {
			if !strings.Contains(body, want) {
				t.Errorf("curl body lacks %q:\n%s", want, body)
			}
		}
		// The example in the body is ready to send: run it as it is.
		var example string
		for _, l := range strings.Split(body, "\n") {
			if s, ok := strings.CutPrefix(l, "example: "); ok {
				example = s
			}
		}
		if example == "" {
			t.Fatalf("no example in:\n%s", body)
		}
		cmd := e.w.Sandbox.Command(context.Background(), "sh", "-c", example+" -w ' %{http_code}'")
		cmd.Env = append(testnet.GitEnv(t), env...)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.HasSuffix(strings.TrimSpace(string(out)), "201") {
			t.Fatalf("the example did not file: %v\n%s", err, out)
		}
	})

	t.Run("a sandbox files only as itself and not without limit", func(t *testing.T) {
		runC, rootsC := e.newRun(t, "plain")
		c := e.sandboxClient(t, "acme", runC.Token, rootsC)
		file := func(body string) (int, string) {
			resp, err := c.Post("http://sluice.internal/v1/access-requests", "application/json", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			return resp.StatusCode, string(b)
		}
		for i := range 3 {
			if code, out := file(fmt.Sprintf(`{"host":"h%d.example.test","ports":[443],"reason":"need <b>it</b>"}`, i)); code != 201 {
				t.Fatalf("filing %d: %d %s", i, code, out)
			}
		}
		if code, _ := file(`{"host":"h9.example.test","reason":"one more"}`); code != 429 {
			t.Fatalf("a fourth new filing: %d, want 429", code)
		}
		// The same thing again joins its request: no new row in the queue.
		if code, _ := file(`{"host":"h0.example.test","ports":[443],"reason":"again"}`); code != 201 {
			t.Fatalf("joining: %d", code)
		}
		for _, bad := range []string{`{"host":"x.example.test","reason":"r","tenant":"globex"}`, `{"host":"x.example.test","reason":"r","run":"` + runA.ID + `"}`} {
			if code, _ := file(bad); code != 400 {
				t.Errorf("%s: %d, want 400", bad, code)
			}
		}
		// Another run's request is not there for it.
		var out struct{ Requests []pending }
		e.api(t, "rev", "GET", "/api/access-requests?state=approved", nil, &out)
		if len(out.Requests) == 0 {
			t.Fatal("no approved request")
		}
		resp, err := c.Get("http://sluice.internal/v1/access-requests/" + out.Requests[0].ID)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 404 {
			t.Fatalf("another run's request: %d, want 404", resp.StatusCode)
		}
		// A run token cannot approve anything: the admin API refuses it, and
		// the sandbox cannot reach the admin listener through the proxy.
		req, _ := http.NewRequest("POST", "http://127.0.0.1:8080/api/access-requests/"+out.Requests[0].ID+"/review", strings.NewReader(`{"approve":true}`))
		req.Header.Set("Authorization", "Bearer acme:"+runC.Token)
		ar, err := e.admin.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		ar.Body.Close()
		if ar.StatusCode != 401 {
			t.Fatalf("run token on the admin API: %d, want 401", ar.StatusCode)
		}
		// (Refused inside TLS: the CONNECT is answered, its request refused,
		// and nothing is dialled.)
		code, reason, tc := e.connect(t, "acme/plain", e.token, "127.0.0.1:8080")
		if code == 200 {
			code, reason, err = startTLS(t, tc, roots, "127.0.0.1").get("127.0.0.1:8080", "/api/access-requests")
			if err != nil {
				t.Fatal(err)
			}
		}
		if code != 403 || reason != "host-not-allowed" {
			t.Fatalf("the admin listener through the proxy: %d %q", code, reason)
		}
	})

	t.Run("shadow forwards, the address guard does not", func(t *testing.T) {
		c := e.sandboxClient(t, "acme/shadowed", e.token, roots)
		resp, err := c.Post("https://docs.example.test/notes", "text/plain", strings.NewReader("hello"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("shadow POST: %d", resp.StatusCode)
		}
		resp, err = c.Get("https://loop.example.test/")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 403 || resp.Header.Get("Sluice-Reason") != "address-not-allowed" {
			t.Fatalf("loopback in shadow: %d %s", resp.StatusCode, b)
		}
		var incs struct {
			Incidents []struct{ Action, Host string }
		}
		e.api(t, "rev", "GET", "/api/incidents?tenant=acme&class=shadowed", nil, &incs)
		would := 0
		for _, in := range incs.Incidents {
			if in.Action == "would-block" && in.Host == "docs.example.test" {
				would++
			}
		}
		if would == 0 {
			t.Fatalf("no would-block incident: %+v", incs.Incidents)
		}
	})

	t.Run("policy propose accepts the day's traffic", func(t *testing.T) {
		// Traffic the draft must accept: allowed GETs of class plain.
		c := e.sandboxClient(t, "acme/plain", e.token, roots)
		for _, p := range []string{"/a/1", "/a/2", "/b"} {
			resp, err := c.Get("https://docs.example.test" + p)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
		time.Sleep(2500 * time.Millisecond) // the observation writer flushes every 2s
		out, err := e.w.Gateway.Run(t, sluiceBin, "policy", "propose", "--config", e.cfg, "--tenant", "acme", "--since", "1d")
		if err != nil {
			t.Fatalf("propose: %v\n%s", err, out)
		}
		draft := filepath.Join(e.dir, "draft.yaml")
		mustWrite(t, draft, out, 0o600)
		if o, err := e.w.Gateway.Run(t, sluiceBin, "config", "check", "--config", draft); err != nil {
			t.Fatalf("config check of the draft: %v\n%s\n%s", err, o, out)
		}
		cfg, err := config.Load(draft)
		if err != nil {
			t.Fatal(err)
		}
		eng, err := rules.Compile(cfg.Policy(), cfg.Token)
		if err != nil {
			t.Fatal(err)
		}
		decide := func(class, host, method, path string) rules.Action {
			return eng.Decide(rules.Query{Identity: rules.Identity{Tenant: "acme", Class: class}, Host: host, Port: 443,
				Method: method, Path: path, Stage: rules.StageRequest}).Action
		}
		for _, ok := range []struct{ class, host, method, path string }{
			{"plain", "docs.example.test", "GET", "/a/1"}, {"plain", "docs.example.test", "GET", "/b"},
			{"shadowed", "docs.example.test", "POST", "/notes"}, {"agent", "held.example.test", "GET", "/pkg"},
		} {
			if got := decide(ok.class, ok.host, ok.method, ok.path); got != rules.Allow {
				t.Errorf("replay %+v: %v\n%s", ok, got, out)
			}
		}
		for _, no := range []struct{ class, host, method, path string }{
			{"plain", "docs.example.test", "DELETE", "/a/1"}, {"plain", "docs.example.test", "GET", "/c"},
			{"plain", "evil.example.test", "GET", "/upload"}, {"agent", "other.example.test", "GET", "/"},
			{"shadowed", "loop.example.test", "GET", "/"},
		} {
			if got := decide(no.class, no.host, no.method, no.path); got != rules.Deny {
				t.Errorf("the draft lets %+v through\n%s", no, out)
			}
		}
		if !strings.Contains(out, `host "evil.example.test"`) {
			t.Errorf("the refusal is not listed:\n%s", out)
		}
	})
}
