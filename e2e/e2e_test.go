// Package e2e runs the real sluice binary in a network namespace between a
// sandbox and an "internet", and real clients (curl, git, Go) against it.
package e2e

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-egress/sluice/internal/testnet"
)

// Addresses in the internet namespace (TEST-NET, plus the forbidden ones
// that exist there only to show that the gateway never dials them).
var (
	apiAddr      = netip.MustParseAddr("198.51.100.10") // api, git
	passAddr     = netip.MustParseAddr("198.51.100.11")
	badAddr      = netip.MustParseAddr("198.51.100.12") // certificate from an untrusted CA
	otherAddr    = netip.MustParseAddr("203.0.113.10")
	privateAddr  = netip.MustParseAddr("10.77.0.10")
	metadataAddr = netip.MustParseAddr("169.254.169.254")
)

const policy = `
version: 1
listen:
  proxy: 192.0.2.1:3128
data_dir: data
upstream:
  extra_roots: [upstream-ca.pem]
  hosts:
    api.example.test: 198.51.100.10
    git.example.test: 198.51.100.10
    other.example.test: 203.0.113.10
    pass.example.test: 198.51.100.11
    bad.example.test: 198.51.100.12
    loop.example.test: 127.0.0.1
    private.example.test: 10.77.0.10
    metadata.example.test: 169.254.169.254
    gateway.example.test: 192.0.2.1
tenants:
  acme:
    token_file: acme.token
    classes:
      agent:
        allow:
          - host: api.example.test
            methods: [GET, POST]
            paths: ["/v1/"]
          - host: git.example.test
          - host: other.example.test
          - host: bad.example.test
          - host: loop.example.test
          - host: private.example.test
          - host: metadata.example.test
          - host: gateway.example.test
            ports: [443, 3128]
        passthrough:
          - host: pass.example.test
  globex:
    token_file: globex.token
    classes:
      agent:
        allow:
          - host: other.example.test
`

// env is a running gateway in its namespace with its exported trust files.
type env struct {
	*fixture
	trust    map[string]string   // tenant -> export dir
	forbid   []*countingListener // listeners the gateway must never reach
	upstream *testnet.Upstream
}

func start(t *testing.T) *env {
	e := &env{fixture: newFixture(t, policy, "acme", "globex"), trust: map[string]string{}}
	w := e.w
	untrusted := testnet.NewTestCA(t, "untrusted")
	for _, a := range []netip.Addr{apiAddr, passAddr, badAddr, otherAddr, privateAddr, metadataAddr} {
		w.AddUpstreamAddr(t, a)
	}
	repos := t.TempDir()
	testnet.MakeBareRepo(t, repos, "demo")
	git := testnet.GitHandler(t, repos)
	mux := http.NewServeMux()
	mux.Handle("/demo.git/", git)
	mux.HandleFunc("/", func(rw http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(rw, "hello from %s %s", r.Host, r.URL.Path)
	})
	e.upstream = w.ServeUpstream(t, testnet.HostPort(apiAddr, 443), e.upCA.ServerTLS(t, "api.example.test", "git.example.test"), mux)
	w.ServeUpstream(t, testnet.HostPort(otherAddr, 443), e.upCA.ServerTLS(t, "other.example.test"), nil)
	w.ServeUpstream(t, testnet.HostPort(passAddr, 443), e.upCA.ServerTLS(t, "pass.example.test"), nil)
	w.ServeUpstream(t, testnet.HostPort(badAddr, 443), untrusted.ServerTLS(t, "bad.example.test"), nil)
	// Real listeners where the forbidden names point: reachable from the
	// gateway's namespace, so that only the gateway's own check stops it.
	e.forbid = append(e.forbid,
		listenCounting(t, w.Internet, testnet.HostPort(privateAddr, 443)),
		listenCounting(t, w.Internet, testnet.HostPort(metadataAddr, 443)),
		listenCounting(t, w.Gateway, "127.0.0.1:443"),
	)
	e.serve(t, "5s")
	for _, tenant := range []string{"acme", "globex"} {
		e.trust[tenant] = e.exportTrust(t, tenant)
	}
	return e
}

// envFile reads the exported sluice.env lines.
func (e *env) envFile(t *testing.T, tenant string) []string { return envLines(t, e.trust[tenant]) }

// tenantRoots trusts only the tenant's exported CA.
func (e *env) tenantRoots(t *testing.T, tenant string) *x509.CertPool {
	return trustRoots(t, e.trust[tenant])
}

func (e *env) client(t *testing.T, user, tenantForToken string, roots *x509.CertPool) *http.Client {
	return e.sandboxClient(t, user, e.tokens[tenantForToken], roots)
}

// curl runs curl in the sandbox with the exported env file; it returns the
// HTTP code, the CONNECT code, the Sluice-Reason seen, and the body.
func (e *env) curl(t *testing.T, tenant string, args ...string) (code, connectCode, reason, body string) {
	return e.sandboxCurl(t, e.envFile(t, tenant), args...)
}

func TestEndToEnd(t *testing.T) {
	e := start(t)

	t.Run("curl reaches an allowed host through the tenant CA", func(t *testing.T) {
		code, _, _, body := e.curl(t, "acme", "https://api.example.test/v1/hello")
		if code != "200" || body != "hello from api.example.test /v1/hello" {
			t.Fatalf("curl: %s %q", code, body)
		}
	})

	t.Run("curl is refused with the right reason", func(t *testing.T) {
		tests := []struct {
			name, url, method, want string
		}{
			{"host", "https://evil.example.test/", "GET", "host-not-allowed"},
			{"port", "https://api.example.test:8443/v1/", "GET", "port-not-allowed"},
			{"method", "https://api.example.test/v1/x", "DELETE", "method-not-allowed"},
			{"path", "https://api.example.test/admin", "GET", "path-not-allowed"},
			{"loopback", "https://loop.example.test/", "GET", "address-not-allowed"},
			{"private", "https://private.example.test/", "GET", "address-not-allowed"},
			{"metadata", "https://metadata.example.test/", "GET", "address-not-allowed"},
			{"the gateway itself", "https://gateway.example.test:3128/", "GET", "address-not-allowed"},
			{"bad upstream certificate", "https://bad.example.test/", "GET", "upstream-tls-failed"},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				code, connect, reason, _ := e.curl(t, "acme", "-X", tc.method, tc.url)
				if reason != tc.want {
					t.Fatalf("reason %q (http %s, connect %s), want %q", reason, code, connect, tc.want)
				}
				if code == "200" {
					t.Fatalf("refused request answered 200")
				}
			})
		}
		for _, l := range e.forbid {
			if n := l.accepted.Load(); n != 0 {
				t.Errorf("%s: the gateway connected %d times to a forbidden address", l.addr, n)
			}
		}
	})

	t.Run("git clones over HTTPS through the gateway", func(t *testing.T) {
		dst := filepath.Join(t.TempDir(), "demo")
		cmd := e.w.Sandbox.Command(context.Background(), "git", "clone", "https://git.example.test/demo.git", dst)
		cmd.Env = append(testnet.GitEnv(t), e.envFile(t, "acme")...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git clone: %v\n%s", err, out)
		}
		b, err := os.ReadFile(filepath.Join(dst, "README.md"))
		if err != nil || strings.TrimSpace(string(b)) != "hello sluice" {
			t.Fatalf("cloned README: %q %v", b, err)
		}
	})

	t.Run("git push of a commit with a secret is refused, a clean one goes", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "demo")
		env := append(testnet.GitEnv(t), e.envFile(t, "acme")...)
		gitIn := func(args ...string) (string, error) {
			cmd := e.w.Sandbox.Command(context.Background(), "git", args...)
			cmd.Dir, cmd.Env = filepath.Dir(dir), env
			if _, err := os.Stat(dir); err == nil {
				cmd.Dir = dir
			}
			out, err := cmd.CombinedOutput()
			return string(out), err
		}
		commit := func(name, content string) string {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, args := range [][]string{{"add", name}, {"commit", "-q", "-m", "add " + name}} {
				if out, err := gitIn(args...); err != nil {
					t.Fatalf("git %v: %v\n%s", args, err, out)
				}
			}
			out, _ := gitIn("rev-parse", "HEAD")
			return strings.TrimSpace(out)
		}
		if out, err := gitIn("clone", "-q", "https://git.example.test/demo.git", dir); err != nil {
			t.Fatalf("git clone: %v\n%s", err, out)
		}
		clean := commit("notes.txt", "release notes\n")
		if out, err := gitIn("push", "-q", "origin", "HEAD:main"); err != nil {
			t.Fatalf("a clean push: %v\n%s", err, out)
		}
		// The token goes in compressed, in the push's packfile; removing it in
		// the next commit leaves it in the history that is pushed.
		commit(".env", "GITHUB_TOKEN="+fake(t, "github-pat")+"\n")
		if out, err := gitIn("rm", "-q", ".env"); err != nil {
			t.Fatalf("git rm: %v\n%s", err, out)
		}
		if out, err := gitIn("commit", "-q", "-m", "remove .env"); err != nil {
			t.Fatalf("git commit: %v\n%s", err, out)
		}
		out, err := gitIn("push", "origin", "HEAD:main")
		if err == nil || !strings.Contains(out, "403") {
			t.Fatalf("a push of a commit with a token: %v, want 403\n%s", err, out)
		}
		remote, err := gitIn("ls-remote", "origin", "refs/heads/main")
		if err != nil || !strings.HasPrefix(remote, clean) {
			t.Fatalf("the remote's main is %q (%v), want the clean commit %s", remote, err, clean)
		}
	})

	t.Run("Go client in the sandbox", func(t *testing.T) {
		resp, err := e.client(t, "acme", "acme", e.tenantRoots(t, "acme")).Get("https://other.example.test/x")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(resp.TLS.PeerCertificates[0].Issuer.CommonName, "acme") {
			t.Fatalf("%d, issuer %q", resp.StatusCode, resp.TLS.PeerCertificates[0].Issuer.CommonName)
		}
	})

	t.Run("sandbox has no direct way out", func(t *testing.T) {
		for _, addr := range []string{testnet.HostPort(apiAddr, 443), testnet.HostPort(otherAddr, 443)} {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			c, err := e.w.Sandbox.DialContext(ctx, "tcp", addr)
			cancel()
			if err == nil {
				c.Close()
				t.Errorf("sandbox reached %s directly", addr)
			}
		}
		cmd := e.w.Sandbox.Command(context.Background(), "curl", "-sS", "--max-time", "3", "--noproxy", "*",
			"--cacert", filepath.Join(e.dir, "upstream-ca.pem"), "--resolve", "api.example.test:443:198.51.100.10", "https://api.example.test/v1/")
		if err := cmd.Run(); err == nil {
			t.Error("curl without the proxy reached the upstream")
		}
	})

	t.Run("passthrough shows the upstream's own certificate", func(t *testing.T) {
		resp, err := e.client(t, "acme", "acme", e.upCA.Pool()).Get("https://pass.example.test/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.TLS.PeerCertificates[0].Issuer.CommonName; got != e.upCA.Cert.Subject.CommonName {
			t.Fatalf("passthrough issuer %q", got)
		}
	})

	t.Run("SNI and Host must match the CONNECT host", func(t *testing.T) {
		conn := e.rawConnect(t, "acme", "api.example.test:443")
		tc := tls.Client(conn, &tls.Config{ServerName: "other.example.test", RootCAs: e.tenantRoots(t, "acme")})
		if err := tc.Handshake(); err == nil {
			t.Fatal("TLS with a fronted SNI was accepted")
		}
		conn = e.rawConnect(t, "acme", "api.example.test:443")
		tc = tls.Client(conn, &tls.Config{ServerName: "api.example.test", RootCAs: e.tenantRoots(t, "acme")})
		if err := tc.Handshake(); err != nil {
			t.Fatal(err)
		}
		fmt.Fprint(tc, "GET /v1/x HTTP/1.1\r\nHost: other.example.test\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(tc), nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 403 || resp.Header.Get("Sluice-Reason") != "domain-fronting" {
			t.Fatalf("fronted Host: %d %q", resp.StatusCode, resp.Header.Get("Sluice-Reason"))
		}
	})

	t.Run("credentials", func(t *testing.T) {
		tests := []struct{ name, user, tokenOf string }{
			{"none", "", ""},
			{"wrong token", "acme", "nobody"},
			{"other tenant's token", "acme", "globex"},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				if code, _, _ := e.connect(t, tc.user, e.tokens[tc.tokenOf], "other.example.test:443"); code != http.StatusProxyAuthRequired {
					t.Fatalf("got %d, want 407", code)
				}
			})
		}
	})

	t.Run("tenants are isolated", func(t *testing.T) {
		// globex's tunnel is signed by globex's CA: acme's CA does not verify it.
		_, err := e.client(t, "globex", "globex", e.tenantRoots(t, "acme")).Get("https://other.example.test/")
		if err == nil {
			t.Fatal("acme's CA verified a globex tunnel")
		}
		resp, err := e.client(t, "globex", "globex", e.tenantRoots(t, "globex")).Get("https://other.example.test/")
		if err != nil {
			t.Fatalf("globex on its own host: %v", err)
		}
		resp.Body.Close()
		// acme's hosts are not globex's.
		if code, _, _ := e.connect(t, "globex", e.tokens["globex"], "api.example.test:443"); code != 403 {
			t.Fatalf("globex CONNECT to acme's host: %d", code)
		}
	})

	t.Run("the token never reaches the log", func(t *testing.T) {
		for tenant, tok := range e.tokens {
			if strings.Contains(e.log(), tok) {
				t.Errorf("%s's token is in the gateway log", tenant)
			}
		}
	})

	t.Run("SIGTERM drains and exits cleanly", func(t *testing.T) {
		if err := e.gw.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		exited, err := e.gw.exitWithin(15 * time.Second)
		if !exited {
			t.Fatal("gateway did not exit within 15s of SIGTERM")
		}
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v", err)
		}
		if !strings.Contains(e.log(), "stopped") {
			t.Errorf("no clean stop in the log")
		}
	})
}

func (e *env) rawConnect(t *testing.T, user, authority string) net.Conn {
	code, reason, c := e.connect(t, user, e.tokens[user], authority)
	if c == nil {
		t.Fatalf("CONNECT %s: %d %s", authority, code, reason)
	}
	return c
}

// countingListener accepts and counts connections it should never get.
type countingListener struct {
	addr     string
	accepted atomic.Int64
}

func listenCounting(t *testing.T, ns *testnet.NS, addr string) *countingListener {
	l, err := ns.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen %s in %s: %v", addr, ns.Name, err)
	}
	cl := &countingListener{addr: addr}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			cl.accepted.Add(1)
			c.Close()
		}
	}()
	t.Cleanup(func() { l.Close() })
	return cl
}
