package e2e

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-egress/sluice/internal/testnet"
)

// sluiceBin is the sluice binary TestMain builds for every test.
var sluiceBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sluice-e2e-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	sluiceBin = filepath.Join(dir, "sluice")
	build := exec.Command("go", "build", "-o", sluiceBin, "../cmd/sluice")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build sluice:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// proxyAddr is where every namespace fixture's config has the proxy listen, in the
// gateway namespace, as the sandbox reaches it.
const proxyAddr = "192.0.2.1:3128"

// sluiceProc is a running sluice binary.
type sluiceProc struct {
	cmd    *exec.Cmd
	stderr *syncBuffer
	lines  []string      // stdout up to the line startSluice waited for
	done   chan struct{} // closed once the process has exited
	err    error         // Wait's result, set before done is closed
}

// startSluice runs sluice with args in ns (nil: this process's namespace) and waits until a
// line of its standard output contains ready. The process is killed at the end of the test,
// and its standard error logged when the test failed.
func startSluice(t *testing.T, ns *testnet.NS, ready string, args ...string) *sluiceProc {
	t.Helper()
	cmd := exec.Command(sluiceBin, args...)
	if ns != nil {
		cmd = ns.Command(context.Background(), sluiceBin, args...)
	}
	p := &sluiceProc{cmd: cmd, stderr: &syncBuffer{}, done: make(chan struct{})}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	seen := make(chan []string, 1)
	go func() {
		var lines []string
		announced := false
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if announced {
				continue // drain the rest
			}
			lines = append(lines, sc.Text())
			if strings.Contains(sc.Text(), ready) {
				announced = true
				seen <- lines
			}
		}
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("gateway log:\n%s", p.stderr.String())
		}
	})
	select {
	case p.lines = <-seen:
	case <-p.done:
		t.Fatalf("gateway exited at start: %v\n%s", p.err, p.stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("gateway did not start\n%s", p.stderr.String())
	}
	return p
}

// stop kills the process, unless it has exited already, and waits for it.
func (p *sluiceProc) stop() {
	select {
	case <-p.done:
	default:
		p.cmd.Process.Kill()
		<-p.done
	}
}

// exitWithin waits up to d for the process to exit by itself: whether it did, and Wait's
// result.
func (p *sluiceProc) exitWithin(d time.Duration) (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	case <-time.After(d):
		return false, nil
	}
}

// fixture is a sluice gateway in the gateway namespace of a new testnet world, run on the
// files in dir.
type fixture struct {
	w      *testnet.World
	dir    string            // sluice.yaml, upstream-ca.pem, the token files and data
	cfg    string            // dir/sluice.yaml
	upCA   *testnet.TestCA   // the internet's CA, the gateway's extra upstream root
	tokens map[string]string // tenant -> its proxy token, in dir/<tenant>.token
	token  string            // the first tenant's token
	gw     *sluiceProc       // set by serve
}

// newFixture makes a world, the internet's CA, and dir with config as sluice.yaml, the CA
// as upstream-ca.pem and a random token for each tenant. It does not start the gateway,
// so that the test can first serve upstreams and write more files.
func newFixture(t *testing.T, config string, tenants ...string) *fixture {
	f := &fixture{w: testnet.New(t), dir: t.TempDir(), upCA: testnet.NewTestCA(t, "internet"), tokens: map[string]string{}}
	for _, tenant := range tenants {
		f.tokens[tenant] = randomToken(t)
		mustWrite(t, filepath.Join(f.dir, tenant+".token"), f.tokens[tenant]+"\n", 0o600)
	}
	f.token = f.tokens[tenants[0]]
	mustWrite(t, filepath.Join(f.dir, "upstream-ca.pem"), string(f.upCA.CertPEM), 0o644)
	f.cfg = filepath.Join(f.dir, "sluice.yaml")
	mustWrite(t, f.cfg, config, 0o600)
	return f
}

// serve starts `sluice serve` on the config with the given drain timeout and waits until
// it announces the proxy on proxyAddr.
func (f *fixture) serve(t *testing.T, drain string) {
	t.Helper()
	f.gw = startSluice(t, f.w.Gateway, "proxy on", "serve", "--config", f.cfg, "--drain-timeout", drain)
	if line := f.gw.lines[len(f.gw.lines)-1]; !strings.HasPrefix(line, "sluice ") || !strings.Contains(line, "http://"+proxyAddr) {
		t.Fatalf("gateway announced %q", line)
	}
}

// log is the running gateway's standard error so far.
func (f *fixture) log() string { return f.gw.stderr.String() }

// logged reports whether substr reaches the gateway's log within a few
// seconds: a refusal's client may see the connection end before the line
// is written.
func (f *fixture) logged(substr string) bool {
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if strings.Contains(f.log(), substr) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// exportTrust runs `sluice ca export` for tenant and returns the directory it wrote.
func (f *fixture) exportTrust(t *testing.T, tenant string) string {
	t.Helper()
	out := filepath.Join(f.dir, "trust-"+tenant)
	if _, err := f.w.Gateway.Run(t, sluiceBin, "ca", "export", "--config", f.cfg, "--tenant", tenant, "--out", out); err != nil {
		t.Fatalf("ca export: %v", err)
	}
	return out
}

// trustRoots trusts only the CA in an exported trust directory.
func trustRoots(t *testing.T, trustDir string) *x509.CertPool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(trustDir, "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	p := x509.NewCertPool()
	if !p.AppendCertsFromPEM(b) {
		t.Fatal("ca.pem holds no certificate")
	}
	return p
}

// envLines are the lines of an exported trust directory's sluice.env.
func envLines(t *testing.T, trustDir string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(trustDir, "sluice.env"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// sandboxClient is a Go client in the sandbox, proxied as user with token.
func (f *fixture) sandboxClient(t *testing.T, user, token string, roots *x509.CertPool) *http.Client {
	proxy := &url.URL{Scheme: "http", User: url.UserPassword(user, token), Host: proxyAddr}
	c := f.w.SandboxHTTPClient(proxy, roots)
	c.Timeout = 20 * time.Second
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// sandboxCurl runs curl in the sandbox with env (an exported sluice.env); it returns the
// HTTP code, the CONNECT code, the Sluice-Reason seen, and the body.
func (f *fixture) sandboxCurl(t *testing.T, env []string, args ...string) (code, connectCode, reason, body string) {
	full := append([]string{"-sS", "-v", "--max-time", "15", "-o", "-", "-w", "\n%{http_code} %{http_connect}"}, args...)
	cmd := f.w.Sandbox.Command(context.Background(), "curl", full...)
	cmd.Env = append(testnet.GitEnv(t), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, _ := cmd.Output()
	s := string(out)
	i := strings.LastIndex(s, "\n")
	body = s[:max(i, 0)]
	fmt.Sscan(s[i+1:], &code, &connectCode)
	for _, l := range strings.Split(stderr.String(), "\n") {
		if k, v, ok := strings.Cut(strings.TrimPrefix(l, "< "), ":"); ok && strings.EqualFold(k, "Sluice-Reason") {
			reason = strings.TrimSpace(v)
		}
	}
	return code, connectCode, reason, body
}

// connect sends CONNECT authority from the sandbox as user with token (no
// Proxy-Authorization when user is empty). It returns the status, the Sluice-Reason and,
// on 200, the tunnel, closed at the end of the test.
func (f *fixture) connect(t *testing.T, user, token, authority string) (int, string, net.Conn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := f.w.Sandbox.DialContext(ctx, "tcp", proxyAddr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n", authority, authority)
	if user != "" {
		fmt.Fprintf(c, "Proxy-Authorization: Basic %s\r\n", basicAuth(user, token))
	}
	io.WriteString(c, "\r\n")
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
	t.Cleanup(func() { c.Close() })
	return 200, "", c
}

// connect443 CONNECTs to host:443 as acme with token.
func (f *fixture) connect443(t *testing.T, token, host string) (int, string, net.Conn) {
	t.Helper()
	return f.connect(t, "acme", token, host+":443")
}

// tunnel is one CONNECT tunnel with TLS inside, on which requests are sent one by one.
type tunnel struct {
	tc *tls.Conn
	br *bufio.Reader
}

// startTLS completes TLS to host, trusting roots, on a CONNECT tunnel.
func startTLS(t *testing.T, c net.Conn, roots *x509.CertPool, host string) *tunnel {
	t.Helper()
	tc := tls.Client(c, &tls.Config{ServerName: host, RootCAs: roots})
	tc.SetDeadline(time.Now().Add(10 * time.Second))
	if err := tc.Handshake(); err != nil {
		t.Fatalf("TLS to %s: %v", host, err)
	}
	t.Cleanup(func() { tc.Close() })
	return &tunnel{tc: tc, br: bufio.NewReader(tc)}
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
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Sluice-Reason"), nil
}

// basicAuth is the base64 of user:pass, as in a Basic authorization header.
func basicAuth(user, pass string) string {
	return base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
}

func randomToken(t *testing.T) string {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

func mustWrite(t *testing.T, path, data string, mode os.FileMode) {
	if err := os.WriteFile(path, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
}

// syncBuffer is a goroutine-safe log buffer.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
