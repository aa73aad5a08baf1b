package e2e

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
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
	*fixture
	admin *http.Client
}

func startAPI(t *testing.T) *apiEnv {
	e := &apiEnv{fixture: newFixture(t, apiConfig, "acme")}
	e.w.AddUpstreamAddr(t, apiRegistryAddr)
	e.w.ServeUpstream(t, testnet.HostPort(apiRegistryAddr, 443), e.upCA.ServerTLS(t, "npm.registry.example.test", "granted.example.test"), nil)
	h, err := bcrypt.GenerateFromPassword([]byte(reviewerPassword), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(e.dir, "rev.hash"), string(h)+"\n", 0o600)
	e.admin = e.w.Gateway.HTTPClient(nil, nil)
	e.serve(t, "1s")
	return e
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

// tlsGet completes TLS on a CONNECT tunnel and sends one GET.
func tlsGet(t *testing.T, c net.Conn, roots *x509.CertPool, host string) (*tunnel, int) {
	t.Helper()
	tu := startTLS(t, c, roots, host)
	code, _, err := tu.get(host, "/")
	if err != nil {
		t.Fatalf("GET on the tunnel to %s: %v", host, err)
	}
	return tu, code
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
	if code, reason, _ := e.connect443(t, e.token, "npm.registry.example.test"); code != 403 || reason != "host-not-allowed" {
		t.Fatalf("tenant token to the registry: %d %s, want 403 host-not-allowed", code, reason)
	}
	code, _, c := e.connect443(t, r.Token, "npm.registry.example.test")
	if code != 200 {
		t.Fatalf("run token to the derived registry: %d", code)
	}
	_, got := tlsGet(t, c, roots, "npm.registry.example.test")
	if got != 200 {
		t.Fatalf("GET through the run's tunnel: %d", got)
	}

	// A restart keeps the run: only its token's hash was stored.
	r2 := e.createRun(t)
	e.gw.stop()
	e.serve(t, "1s")
	if code, reason, c := e.connect443(t, r2.Token, "npm.registry.example.test"); code != 200 {
		t.Fatalf("run token after a restart: %d %s", code, reason)
	} else {
		c.Close()
	}
	// The tunnel opened before the restart is gone with the old process; open a new one.
	code, _, c = e.connect443(t, r.Token, "npm.registry.example.test")
	if code != 200 {
		t.Fatalf("first run after restart: %d", code)
	}
	tu, _ := tlsGet(t, c, roots, "npm.registry.example.test")

	// Ending the run closes its open tunnel and its token gets run-ended at once.
	if code := e.api(t, "tenant", "DELETE", "/api/runs/"+r.ID, nil, nil); code != 200 {
		t.Fatalf("DELETE run: %d", code)
	}
	if code, _, err := tu.get("npm.registry.example.test", "/"); err == nil {
		t.Fatalf("the ended run's tunnel still answers: %d", code)
	}
	if code, reason, _ := e.connect443(t, r.Token, "npm.registry.example.test"); code != 403 || reason != "run-ended" {
		t.Fatalf("ended run's token: %d %q, want 403 run-ended", code, reason)
	}
	// The other run is untouched.
	if code, _, c := e.connect443(t, r2.Token, "npm.registry.example.test"); code != 200 {
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
	if code, reason, _ := e.connect443(t, e.token, "granted.example.test"); code != 403 || reason != "host-not-allowed" {
		t.Fatalf("before the request: %d %s", code, reason)
	}
	var req struct{ ID, State string }
	if code := e.api(t, "tenant", "POST", "/api/access-requests", map[string]any{
		"host": "granted.example.test", "methods": []string{"GET"}, "justification": "e2e", "ttl": "6s"}, &req); code != 201 {
		t.Fatalf("file request: %d", code)
	}
	filed := time.Now()
	// Pending is not granted.
	if code, _, _ := e.connect443(t, e.token, "granted.example.test"); code != 403 {
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
	code, reason, c := e.connect443(t, e.token, "granted.example.test")
	if code != 200 {
		t.Fatalf("after approval: %d %s, want 200", code, reason)
	}
	c.Close()
	// After the expiry: refused again.
	time.Sleep(time.Until(filed.Add(6*time.Second)) + 200*time.Millisecond)
	if code, reason, _ := e.connect443(t, e.token, "granted.example.test"); code != 403 || reason != "host-not-allowed" {
		t.Fatalf("after expiry: %d %s, want 403", code, reason)
	}
}
