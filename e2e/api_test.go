package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/sluice-egress/sluice/internal/testnet"
)

// apiRegistryAddr serves the simulated registry and API of the runs and review tests.
var apiRegistryAddr = netip.MustParseAddr("198.51.100.30")

// apiConfig: the class allows nothing itself; it may derive npm and github, so that a
// run's manifests are what open the registry.
const apiConfig = `
version: 1
listen:
  proxy: 192.0.2.1:3128
  admin: 127.0.0.1:8080
data_dir: data
upstream:
  extra_roots: [upstream-ca.pem]
  hosts:
    npm.registry.example.test: 198.51.100.30
    granted.example.test: 198.51.100.30
presets:
  hosts:
    npm_registry: [npm.registry.example.test]
dashboard:
  users:
    - {name: rev, role: reviewer, password_hash_file: rev.hash}
tenants:
  acme:
    token_file: acme.token
    classes:
      agent:
        derive:
          presets: [npm, github]
`

const reviewerPassword = "reviewer-password-e2e"

// apiEnv is a gateway started on apiConfig, with its admin API reached from the
// gateway namespace's loopback.
type apiEnv struct {
	w      *testnet.World
	dir    string
	token  string
	gw     *gwProc
	stderr *syncBuffer
	admin  *http.Client
}

// gwProc is the running gateway process.
type gwProc struct{ stop func() }

func startAPI(t *testing.T) *apiEnv {
	w := testnet.New(t)
	e := &apiEnv{w: w, dir: t.TempDir(), token: randomToken(t)}
	upCA := testnet.NewTestCA(t, "internet")
	w.AddUpstreamAddr(t, apiRegistryAddr)
	w.ServeUpstream(t, testnet.HostPort(apiRegistryAddr, 443), upCA.ServerTLS(t, "npm.registry.example.test", "granted.example.test"), nil)
	mustWrite(t, filepath.Join(e.dir, "acme.token"), e.token+"\n", 0o600)
	h, err := bcrypt.GenerateFromPassword([]byte(reviewerPassword), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(e.dir, "rev.hash"), string(h)+"\n", 0o600)
	upCA.WritePEM(t, e.dir)
	os.Rename(filepath.Join(e.dir, "internet-ca.pem"), filepath.Join(e.dir, "upstream-ca.pem"))
	mustWrite(t, filepath.Join(e.dir, "sluice.yaml"), apiConfig, 0o600)
	e.admin = w.Gateway.HTTPClient(nil, nil)
	e.start(t)
	return e
}

// start runs `sluice serve` and waits until the proxy and the admin API answer.
func (e *apiEnv) start(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := e.w.Gateway.Command(ctx, sluiceBin, "serve", "--config", filepath.Join(e.dir, "sluice.yaml"), "--drain-timeout", "1s")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	e.stderr = &syncBuffer{}
	cmd.Stderr = e.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		once := false
		for sc.Scan() {
			if !once && strings.Contains(sc.Text(), "proxy on") {
				once = true
				close(ready)
			}
		}
	}()
	stopped := false
	e.gw = &gwProc{stop: func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		cmd.Wait()
	}}
	t.Cleanup(func() {
		e.gw.stop()
		if t.Failed() {
			t.Logf("gateway log:\n%s", e.stderr.String())
		}
	})
	select {
	case <-ready:
	case <-time.After(20 * time.Second):
		t.Fatalf("gateway did not start\n%s", e.stderr.String())
	}
}

// api calls the admin API as the tenant (who "tenant") or the reviewer ("rev").
func (e *apiEnv) api(t *testing.T, who, method, path string, body any, out any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, "http://127.0.0.1:8080"+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	switch who {
	case "tenant":
		req.Header.Set("Authorization", "Bearer acme:"+e.token)
	case "rev":
		req.SetBasicAuth("rev", reviewerPassword)
	}
	resp, err := e.admin.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		t.Logf("%s %s: %d %s", method, path, resp.StatusCode, bytes.TrimSpace(b))
	} else if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
	}
	return resp.StatusCode
}

// apiConnect CONNECTs from the sandbox as acme with token and returns the status, the
// Sluice-Reason and, on 200, the conn.
func (e *apiEnv) apiConnect(t *testing.T, token, host string) (int, string, net.Conn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := e.w.Sandbox.DialContext(ctx, "tcp", "192.0.2.1:3128")
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "CONNECT %s:443 HTTP/1.1\r\nHost: %s:443\r\nProxy-Authorization: Basic %s\r\n\r\n", host, host, basicAuth("acme", token))
	c.SetDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		c.Close()
		t.Fatal(err)
	}
	c.SetDeadline(time.Time{})
	if resp.StatusCode != 200 {
		c.Close()
		return resp.StatusCode, resp.Header.Get("Sluice-Reason"), nil
	}
	return 200, "", c
}

// tlsGet completes TLS on a CONNECT tunnel and sends one GET.
func tlsGet(t *testing.T, c net.Conn, roots *x509.CertPool, host string) (*tls.Conn, *bufio.Reader, int) {
	t.Helper()
	tc := tls.Client(c, &tls.Config{ServerName: host, RootCAs: roots})
	tc.SetDeadline(time.Now().Add(10 * time.Second))
	if err := tc.Handshake(); err != nil {
		t.Fatalf("TLS to %s: %v", host, err)
	}
	t.Cleanup(func() { tc.Close() })
	br := bufio.NewReader(tc)
	code, err := getOn(tc, br, host)
	if err != nil {
		t.Fatalf("GET on the tunnel to %s: %v", host, err)
	}
	return tc, br, code
}

func getOn(tc *tls.Conn, br *bufio.Reader, host string) (int, error) {
	tc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := fmt.Fprintf(tc, "GET / HTTP/1.1\r\nHost: %s\r\n\r\n", host); err != nil {
		return 0, err
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

type e2eRun struct {
	ID       string   `json:"id"`
	Token    string   `json:"token"`
	ProxyURL string   `json:"proxy_url"`
	CAPEM    string   `json:"ca_pem"`
	Env      []string `json:"env"`
	Presets  []struct {
		Preset struct {
			Name string `json:"name"`
		} `json:"preset"`
		Entries int `json:"entries"`
	} `json:"presets"`
}

// createRun runs `sluice run create` (the API client) in the gateway namespace with a
// repository holding a package.json, the tenant token in SLUICE_TOKEN.
func (e *apiEnv) createRun(t *testing.T) e2eRun {
	t.Helper()
	repo := filepath.Join(e.dir, "repo")
	os.MkdirAll(filepath.Join(repo, "node_modules", "dep"), 0o755)
	mustWrite(t, filepath.Join(repo, "package.json"), `{"name": "app", "dependencies": {"left-pad": "^1.3.0"}}`, 0o644)
	mustWrite(t, filepath.Join(repo, "node_modules", "dep", "Cargo.toml"), "[package]\nname='x'\n", 0o644)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := e.w.Gateway.Command(ctx, sluiceBin, "run", "create", "--tenant", "acme", "--class", "agent", "--ttl", "1h",
		"--repo", repo, "--remote", "https://github.com/acme/app.git", "--admin", "http://127.0.0.1:8080", "--json")
	cmd.Env = append(os.Environ(), "SLUICE_TOKEN="+e.token)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("sluice run create: %v\n%s", err, stderr.String())
	}
	var r e2eRun
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("run create output: %v\n%s", err, stdout.String())
	}
	if r.ID == "" || r.Token == "" || !strings.Contains(r.ProxyURL, "192.0.2.1:3128") || len(r.Env) == 0 {
		t.Fatalf("run create answer: %+v", r)
	}
	return r
}

func TestRunsAPI(t *testing.T) {
	e := startAPI(t)
	r := e.createRun(t)
	var names []string
	for _, p := range r.Presets {
		if p.Entries > 0 {
			names = append(names, p.Preset.Name)
		}
	}
	if strings.Join(names, ",") != "github,npm" {
		t.Fatalf("derived presets with entries: %v, want github and npm (node_modules skipped)", names)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM([]byte(r.CAPEM)) {
		t.Fatal("ca_pem holds no certificate")
	}

	// The tenant's own token does not reach the registry: only the run derived it.
	if code, reason, _ := e.apiConnect(t, e.token, "npm.registry.example.test"); code != 403 || reason != "host-not-allowed" {
		t.Fatalf("tenant token to the registry: %d %s, want 403 host-not-allowed", code, reason)
	}
	code, _, c := e.apiConnect(t, r.Token, "npm.registry.example.test")
	if code != 200 {
		t.Fatalf("run token to the derived registry: %d", code)
	}
	tc, br, got := tlsGet(t, c, roots, "npm.registry.example.test")
	if got != 200 {
		t.Fatalf("GET through the run's tunnel: %d", got)
	}

	// A restart keeps the run: only its token's hash was stored.
	r2 := e.createRun(t)
	e.gw.stop()
	e.start(t)
	if code, reason, c := e.apiConnect(t, r2.Token, "npm.registry.example.test"); code != 200 {
		t.Fatalf("run token after a restart: %d %s", code, reason)
	} else {
		c.Close()
	}
	// The tunnel opened before the restart is gone with the old process; open a new one.
	code, _, c = e.apiConnect(t, r.Token, "npm.registry.example.test")
	if code != 200 {
		t.Fatalf("first run after restart: %d", code)
	}
	tc, br, _ = tlsGet(t, c, roots, "npm.registry.example.test")

	// Ending the run closes its open tunnel and its token gets 407 at once.
	if code := e.api(t, "tenant", "DELETE", "/api/runs/"+r.ID, nil, nil); code != 200 {
		t.Fatalf("DELETE run: %d", code)
	}
	if code, err := getOn(tc, br, "npm.registry.example.test"); err == nil {
		t.Fatalf("the ended run's tunnel still answers: %d", code)
	}
	if code, _, _ := e.apiConnect(t, r.Token, "npm.registry.example.test"); code != 407 {
		t.Fatalf("ended run's token: %d, want 407", code)
	}
	// The other run is untouched.
	if code, _, c := e.apiConnect(t, r2.Token, "npm.registry.example.test"); code != 200 {
		t.Fatalf("the other run after ending one: %d", code)
	} else {
		c.Close()
	}
	// The audit log has both runs' creation and the end.
	var audit struct {
		Entries []struct{ Action, Target string }
	}
	e.api(t, "rev", "GET", "/api/audit?tenant=acme", nil, &audit)
	var acts []string
	for _, en := range audit.Entries {
		acts = append(acts, en.Action)
	}
	if got := strings.Join(acts, ","); got != "run.ended,run.created,run.created" {
		t.Fatalf("audit actions %q", got)
	}
}

func TestAccessReviewLive(t *testing.T) {
	e := startAPI(t)
	if code, reason, _ := e.apiConnect(t, e.token, "granted.example.test"); code != 403 || reason != "host-not-allowed" {
		t.Fatalf("before the request: %d %s", code, reason)
	}
	var req struct{ ID, State string }
	if code := e.api(t, "tenant", "POST", "/api/access-requests", map[string]any{
		"host": "granted.example.test", "methods": []string{"GET"}, "justification": "e2e", "ttl": "6s"}, &req); code != 201 {
		t.Fatalf("file request: %d", code)
	}
	filed := time.Now()
	// Pending is not granted.
	if code, _, _ := e.apiConnect(t, e.token, "granted.example.test"); code != 403 {
		t.Fatalf("pending request already grants: %d", code)
	}
	// The tenant cannot approve its own request.
	if code := e.api(t, "tenant", "POST", "/api/access-requests/"+req.ID+"/decision", map[string]any{"approve": true, "reason": "me"}, nil); code != 403 {
		t.Fatalf("tenant approves itself: %d", code)
	}
	if code := e.api(t, "rev", "POST", "/api/access-requests/"+req.ID+"/decision", map[string]any{"approve": true, "reason": "ok"}, nil); code != 200 {
		t.Fatalf("reviewer approves: %d", code)
	}
	// At once, without restart or reload.
	code, reason, c := e.apiConnect(t, e.token, "granted.example.test")
	if code != 200 {
		t.Fatalf("after approval: %d %s, want 200", code, reason)
	}
	c.Close()
	// After the expiry: refused again.
	time.Sleep(time.Until(filed.Add(6*time.Second)) + 200*time.Millisecond)
	if code, reason, _ := e.apiConnect(t, e.token, "granted.example.test"); code != 403 || reason != "host-not-allowed" {
		t.Fatalf("after expiry: %d %s, want 403", code, reason)
	}
}
