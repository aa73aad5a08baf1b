package e2e

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-egress/sluice/internal/testnet"
)

// registryAddr serves every simulated registry and API of the policy tests.
var registryAddr = netip.MustParseAddr("198.51.100.20")

// policyConfig is the live-reload fixture's config: %[1]s holds the class's allow
// entries, so that a test can rewrite the file with other entries.
const policyConfigTmpl = `
version: 1
listen:
  proxy: 192.0.2.1:3128
data_dir: data
upstream:
  extra_roots: [upstream-ca.pem]
  hosts:
    npm.registry.example.test: 198.51.100.20
    goproxy.example.test: 198.51.100.20
    npm.corp.test: 198.51.100.20
    api.example.test: 198.51.100.20
presets:
  hosts:
    npm_registry: [npm.registry.example.test]
tenants:
  acme:
    token_file: acme.token
    classes:
      agent:
        derive:
          presets: [npm, go, github]
        allow:
%[1]s
`

const (
	allowV1 = `          - preset: npm
          - host: api.example.test
            paths: ["/v1/"]`
	allowV2 = `          - host: api.example.test
            paths: ["/v2/"]`
)

// policyEnv is a gateway started on policyConfigTmpl.
type policyEnv struct {
	w      *testnet.World
	dir    string
	cfg    string
	token  string
	roots  *x509.CertPool
	gw     *exec.Cmd
	stderr *syncBuffer
}

func startPolicy(t *testing.T) *policyEnv {
	w := testnet.New(t)
	e := &policyEnv{w: w, dir: t.TempDir(), token: randomToken(t)}
	upCA := testnet.NewTestCA(t, "internet")
	w.AddUpstreamAddr(t, registryAddr)
	w.ServeUpstream(t, testnet.HostPort(registryAddr, 443),
		upCA.ServerTLS(t, "npm.registry.example.test", "goproxy.example.test", "npm.corp.test", "api.example.test"), nil)
	mustWrite(t, filepath.Join(e.dir, "acme.token"), e.token+"\n", 0o600)
	upCA.WritePEM(t, e.dir)
	os.Rename(filepath.Join(e.dir, "internet-ca.pem"), filepath.Join(e.dir, "upstream-ca.pem"))
	e.cfg = filepath.Join(e.dir, "sluice.yaml")
	mustWrite(t, e.cfg, fmt.Sprintf(policyConfigTmpl, allowV1), 0o600)

	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	e.gw = w.Gateway.Command(ctx, sluiceBin, "serve", "--config", e.cfg, "--drain-timeout", "2s")
	stdout, err := e.gw.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	e.stderr = &syncBuffer{}
	e.gw.Stderr = e.stderr
	if err := e.gw.Start(); err != nil {
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
	t.Cleanup(func() {
		e.gw.Process.Kill()
		e.gw.Wait()
		if t.Failed() {
			t.Logf("gateway log:\n%s", e.stderr.String())
		}
	})
	select {
	case <-ready:
	case <-time.After(20 * time.Second):
		t.Fatalf("gateway did not start\n%s", e.stderr.String())
	}
	out := filepath.Join(e.dir, "trust")
	if _, err := w.Gateway.Run(t, sluiceBin, "ca", "export", "--config", e.cfg, "--tenant", "acme", "--out", out); err != nil {
		t.Fatalf("ca export: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(out, "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	e.roots = x509.NewCertPool()
	e.roots.AppendCertsFromPEM(b)
	return e
}

// tunnel is one CONNECT tunnel with TLS inside, on which requests are sent one by one.
type tunnel struct {
	tc *tls.Conn
	br *bufio.Reader
}

// open CONNECTs to host:443 and completes TLS; it fails the test unless the gateway
// answers 200.
func (e *policyEnv) open(t *testing.T, host string) *tunnel {
	t.Helper()
	code, reason, c := e.connect(t, host)
	if c == nil {
		t.Fatalf("CONNECT %s: %d %s", host, code, reason)
	}
	tc := tls.Client(c, &tls.Config{ServerName: host, RootCAs: e.roots})
	if err := tc.Handshake(); err != nil {
		t.Fatalf("TLS to %s: %v", host, err)
	}
	t.Cleanup(func() { tc.Close() })
	return &tunnel{tc: tc, br: bufio.NewReader(tc)}
}

// connect sends a CONNECT and returns the status, the Sluice-Reason and, on 200, the conn.
func (e *policyEnv) connect(t *testing.T, host string) (int, string, net.Conn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := e.w.Sandbox.DialContext(ctx, "tcp", "192.0.2.1:3128")
	if err != nil {
		t.Fatal(err)
	}
	auth := basicAuth("acme", e.token)
	fmt.Fprintf(c, "CONNECT %s:443 HTTP/1.1\r\nHost: %s:443\r\nProxy-Authorization: Basic %s\r\n\r\n", host, host, auth)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		c.Close()
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		c.Close()
		return resp.StatusCode, resp.Header.Get("Sluice-Reason"), nil
	}
	return 200, "", c
}

// get sends one GET on the tunnel: the status and Sluice-Reason, or an error when the
// tunnel was closed.
func (tu *tunnel) get(host, path string) (int, string, error) {
	tu.tc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := fmt.Fprintf(tu.tc, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", path, host); err != nil {
		return 0, "", err
	}
	resp, err := http.ReadResponse(tu.br, nil)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	var sink [512]byte
	for {
		if _, err := resp.Body.Read(sink[:]); err != nil {
			break
		}
	}
	return resp.StatusCode, resp.Header.Get("Sluice-Reason"), nil
}

func (e *policyEnv) waitLog(t *testing.T, substr string, n int) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if strings.Count(e.stderr.String(), substr) >= n {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no %d× %q in the gateway log", n, substr)
}

// rewrite replaces the config file the way an editor or a config manager does: a new
// file renamed over the old one.
func (e *policyEnv) rewrite(t *testing.T, text string) {
	t.Helper()
	tmp := e.cfg + ".new"
	mustWrite(t, tmp, text, 0o600)
	if err := os.Rename(tmp, e.cfg); err != nil {
		t.Fatal(err)
	}
}

func TestPolicyPresetsAndReload(t *testing.T) {
	e := startPolicy(t)

	t.Run("registry from a preset host slot works, other registries are refused", func(t *testing.T) {
		tu := e.open(t, "npm.registry.example.test")
		if code, reason, err := tu.get("npm.registry.example.test", "/left-pad"); err != nil || code != 200 {
			t.Fatalf("preset registry: %d %q %v", code, reason, err)
		}
		// The npm preset is read-only.
		if _, err := fmt.Fprintf(tu.tc, "PUT /left-pad HTTP/1.1\r\nHost: npm.registry.example.test\r\nContent-Length: 0\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(tu.br, nil)
		if err != nil || resp.StatusCode != 403 || resp.Header.Get("Sluice-Reason") != "method-not-allowed" {
			t.Fatalf("publish through the npm preset: %v %v", resp, err)
		}
		resp.Body.Close()
		// go is permitted for derivation but its slots are unset; npm.corp.test is only
		// ever a suggestion from a repository's .npmrc.
		for _, host := range []string{"goproxy.example.test", "npm.corp.test"} {
			if code, reason, c := e.connect(t, host); c != nil || code != 403 || reason != "host-not-allowed" {
				t.Errorf("CONNECT %s: %d %q", host, code, reason)
			}
		}
	})

	t.Run("policy explain and check on a repository", func(t *testing.T) {
		repo := t.TempDir()
		mustWrite(t, filepath.Join(repo, "package.json"), `{"dependencies":{"@corp/x":"1.0.0"}}`, 0o644)
		mustWrite(t, filepath.Join(repo, ".npmrc"), "@corp:registry=https://npm.corp.test/\n//npm.corp.test/:_authToken=do-not-put-secrets-here\n", 0o644)
		mustWrite(t, filepath.Join(repo, "go.mod"), "module example.test/x\n", 0o644)
		out, err := exec.Command(sluiceBin, "policy", "explain", "--config", e.cfg, "--tenant", "acme",
			"--repo", repo, "--remote", "https://github.com/acme/app.git").CombinedOutput()
		if err != nil {
			t.Fatalf("explain: %v\n%s", err, out)
		}
		for _, want := range []string{
			"npm.registry.example.test", "preset npm@1 via " + e.cfg + ":24",
			"presets.hosts.go_proxy, presets.hosts.go_sumdb unset",
			"github.com", "paths /acme/app/,/acme/app.git/", "preset github@1 derived from git remote",
			"npm.corp.test:443", ".npmrc @corp registry (.npmrc:1)",
		} {
			if !strings.Contains(string(out), want) {
				t.Errorf("explain lacks %q:\n%s", want, out)
			}
		}
		if strings.Contains(string(out), "do-not-put-secrets-here") || strings.Contains(string(out), e.token) {
			t.Fatalf("explain prints a secret:\n%s", out)
		}
		out, err = exec.Command(sluiceBin, "policy", "check", "--config", e.cfg, "--tenant", "acme", "https://npm.corp.test/@corp/x").CombinedOutput()
		if err != nil || !strings.HasPrefix(string(out), "deny GET https://npm.corp.test:443/@corp/x: host-not-allowed") {
			t.Fatalf("check: %v %s", err, out)
		}
		out, err = exec.Command(sluiceBin, "policy", "check", "--config", e.cfg, "--tenant", "acme", "--json",
			"https://api.example.test/v1/x", "--method", "POST").CombinedOutput()
		if err != nil || !strings.Contains(string(out), `"action": "allow"`) || !strings.Contains(string(out), `"origin": "`+e.cfg+":25") {
			t.Fatalf("check --json: %v %s", err, out)
		}
	})

	t.Run("reload: open tunnels meet the new policy on their next request", func(t *testing.T) {
		reg := e.open(t, "npm.registry.example.test")
		api := e.open(t, "api.example.test")
		if code, _, err := reg.get("npm.registry.example.test", "/a"); code != 200 || err != nil {
			t.Fatalf("before reload: %d %v", code, err)
		}
		if code, _, err := api.get("api.example.test", "/v1/a"); code != 200 || err != nil {
			t.Fatalf("before reload: %d %v", code, err)
		}
		e.rewrite(t, fmt.Sprintf(policyConfigTmpl, allowV2))
		e.waitLog(t, "policy reloaded", 1)
		// The registry's preset is gone: its tunnel is refused or closed.
		if code, _, err := reg.get("npm.registry.example.test", "/b"); err == nil && code != 403 {
			t.Fatalf("removed host still served on an open tunnel: %d", code)
		}
		if code, reason, c := e.connect(t, "npm.registry.example.test"); c != nil || code != 403 {
			t.Fatalf("CONNECT to a removed host: %d %s", code, reason)
		}
		// The api host stays allowed, on other paths: the same tunnel is checked per request.
		if code, reason, err := api.get("api.example.test", "/v1/a"); err != nil || code != 403 || reason != "path-not-allowed" {
			t.Fatalf("old path on the open tunnel: %d %q %v", code, reason, err)
		}
		if code, _, err := e.open(t, "api.example.test").get("api.example.test", "/v2/a"); err != nil || code != 200 {
			t.Fatalf("new path: %d %v", code, err)
		}
	})

	t.Run("a broken reload keeps the previous policy", func(t *testing.T) {
		api := e.open(t, "api.example.test")
		// A file that would bring the npm preset back, but with an unknown key.
		e.rewrite(t, fmt.Sprintf(policyConfigTmpl, allowV1)+"    bogus_key: 1\n")
		e.waitLog(t, "policy reload failed", 1)
		if err := e.gw.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		e.waitLog(t, "policy reload failed", 2)
		if code, _, err := api.get("api.example.test", "/v2/a"); err != nil || code != 200 {
			t.Fatalf("after a failed reload: %d %v", code, err)
		}
		if code, _, c := e.connect(t, "npm.registry.example.test"); c != nil || code != 403 {
			t.Fatalf("failed reload changed the policy: %d", code)
		}
		if !strings.Contains(e.stderr.String(), "bogus_key") {
			t.Errorf("the log does not say why the reload failed")
		}
		// SIGHUP with a good file again restores a working reload.
		e.rewrite(t, fmt.Sprintf(policyConfigTmpl, allowV1))
		e.gw.Process.Signal(syscall.SIGHUP)
		e.waitLog(t, "policy reloaded", 2)
		if code, reason, c := e.connect(t, "npm.registry.example.test"); c == nil {
			t.Fatalf("after a good reload: %d %s", code, reason)
		}
	})
}

func basicAuth(user, pass string) string {
	return base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
}
