package e2e

import (
	"crypto/x509"
	"errors"
	"fmt"
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
	*fixture
	roots *x509.CertPool
}

func startPolicy(t *testing.T) *policyEnv {
	e := &policyEnv{fixture: newFixture(t, fmt.Sprintf(policyConfigTmpl, allowV1), "acme")}
	e.w.AddUpstreamAddr(t, registryAddr)
	e.w.ServeUpstream(t, testnet.HostPort(registryAddr, 443),
		e.upCA.ServerTLS(t, "npm.registry.example.test", "goproxy.example.test", "npm.corp.test", "api.example.test"), nil)
	e.serve(t, "2s")
	e.roots = trustRoots(t, e.exportTrust(t, "acme"))
	return e
}

// open CONNECTs to host:443 and completes TLS; it fails the test unless the gateway
// answers 200.
func (e *policyEnv) open(t *testing.T, host string) *tunnel {
	t.Helper()
	code, reason, c := e.connect443(t, e.token, host)
	if c == nil {
		t.Fatalf("CONNECT %s: %d %s", host, code, reason)
	}
	return startTLS(t, c, e.roots, host)
}

func (e *policyEnv) waitLog(t *testing.T, substr string, n int) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if strings.Count(e.log(), substr) >= n {
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
			if code, reason, c := e.connect443(t, e.token, host); c != nil || code != 403 || reason != "host-not-allowed" {
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
		// A refusal exits 1, so that a script can test the answer.
		out, err = exec.Command(sluiceBin, "policy", "check", "--config", e.cfg, "--tenant", "acme", "https://npm.corp.test/@corp/x").CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.HasPrefix(string(out), "deny GET https://npm.corp.test:443/@corp/x: host-not-allowed") {
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
		if code, reason, c := e.connect443(t, e.token, "npm.registry.example.test"); c != nil || code != 403 {
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
		if err := e.gw.cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		e.waitLog(t, "policy reload failed", 2)
		if code, _, err := api.get("api.example.test", "/v2/a"); err != nil || code != 200 {
			t.Fatalf("after a failed reload: %d %v", code, err)
		}
		if code, _, c := e.connect443(t, e.token, "npm.registry.example.test"); c != nil || code != 403 {
			t.Fatalf("failed reload changed the policy: %d", code)
		}
		if !strings.Contains(e.log(), "bogus_key") {
			t.Errorf("the log does not say why the reload failed")
		}
		// SIGHUP with a good file again restores a working reload.
		e.rewrite(t, fmt.Sprintf(policyConfigTmpl, allowV1))
		e.gw.cmd.Process.Signal(syscall.SIGHUP)
		e.waitLog(t, "policy reloaded", 2)
		if code, reason, c := e.connect443(t, e.token, "npm.registry.example.test"); c == nil {
			t.Fatalf("after a good reload: %d %s", code, reason)
		}
	})
}
