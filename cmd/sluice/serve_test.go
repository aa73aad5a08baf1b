package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-egress/sluice/gateway"
)

// syncBuffer collects a command's output from another goroutine.
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

var proxyLine = regexp.MustCompile(`proxy on http://(\S+)`)

// startDefault runs `sluice serve` on the embedded default, on port 0.
func startDefault(t *testing.T, dataDir string) (addr string, stdout, stderr *syncBuffer, stop func() int) {
	t.Helper()
	stdout, stderr = &syncBuffer{}, &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, []string{"serve", "--data-dir", dataDir, "--proxy", "127.0.0.1:0", "--admin", "127.0.0.1:0"}, stdout, stderr)
	}()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if m := proxyLine.FindStringSubmatch(stdout.String()); m != nil {
			addr = m[1]
			break
		}
		select {
		case code := <-done:
			t.Fatalf("serve exited with %d:\n%s", code, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start:\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	var once sync.Once
	code := -1
	stop = func() int {
		once.Do(func() {
			cancel()
			select {
			case code = <-done:
			case <-time.After(20 * time.Second):
				t.Error("serve did not stop within 20s")
			}
		})
		return code
	}
	t.Cleanup(func() { stop() })
	return addr, stdout, stderr, stop
}

func connect(t *testing.T, proxy, user, token, authority string) *http.Response {
	t.Helper()
	c, err := net.Dial("tcp", proxy)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n", authority, authority)
	if user != "" {
		fmt.Fprintf(c, "Proxy-Authorization: Basic %s\r\n", base64.StdEncoding.EncodeToString([]byte(user+":"+token)))
	}
	io.WriteString(c, "\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func TestServeEmbeddedDefault(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "sluice-data")
	addr, stdout, stderr, stop := startDefault(t, dataDir)
	out := stdout.String()

	tokenPath := filepath.Join(dataDir, "default.token")
	fi, err := os.Stat(tokenPath)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v", fi, err)
	}
	raw, _ := os.ReadFile(tokenPath)
	token := strings.TrimSpace(string(raw))
	for _, want := range []string{"tenant default:", "ca.pem", "sluice.env", "HTTPS_PROXY=http://default:****@" + addr, "SSL_CERT_FILE=", "NODE_EXTRA_CA_CERTS=",
		"token:    " + tokenPath, "dashboard on http://", "no dashboard user yet", "sluice user hash"} {
		if !strings.Contains(out, want) {
			t.Errorf("start-up output lacks %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(dataDir, "export", "default", "ca.pem")); err != nil {
		t.Errorf("exported CA: %v", err)
	}
	if token != "" && strings.Contains(out, token) {
		t.Error("the start-up output shows the token")
	}

	if resp := connect(t, addr, "", "", "example.test:443"); resp.StatusCode != http.StatusProxyAuthRequired {
		t.Errorf("no credentials: %d, want 407", resp.StatusCode)
	}
	if resp := connect(t, addr, "default", "wrong-token-wrong-token", "example.test:443"); resp.StatusCode != http.StatusProxyAuthRequired {
		t.Errorf("wrong token: %d, want 407", resp.StatusCode)
	}
	resp := connect(t, addr, "default", token, "example.test:443")
	if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Sluice-Reason") != "host-not-allowed" {
		t.Errorf("deny-all default let a CONNECT through: %d %q", resp.StatusCode, resp.Header.Get("Sluice-Reason"))
	}

	if code := stop(); code != 0 {
		t.Errorf("serve exited %d after cancel:\n%s", code, stderr.String())
	}
	for name, s := range map[string]string{"stdout": stdout.String(), "stderr": stderr.String()} {
		if strings.Contains(s, token) {
			t.Errorf("the proxy token is printed on %s", name)
		}
	}
	// A second start reuses the token and the CA.
	_, stdout2, _, _ := startDefault(t, dataDir)
	raw2, _ := os.ReadFile(tokenPath)
	if string(raw2) != string(raw) {
		t.Error("restart replaced the default token")
	}
	_ = stdout2
}

func TestCAExportWritesTrustFilesAndEnv(t *testing.T) {
	dir := t.TempDir()
	dataDir := filepath.Join(dir, "data")
	out := filepath.Join(dir, "trust")
	var stdout, stderr strings.Builder
	code := Run(context.Background(), []string{"ca", "export", "--data-dir", dataDir, "--tenant", "default",
		"--out", out, "--proxy", "gateway.test:3128", "--container-dir", "/etc/sluice"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	env, err := os.ReadFile(filepath.Join(out, "sluice.env"))
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(filepath.Join(out, "sluice.env")); fi.Mode().Perm() != 0o600 {
		t.Errorf("sluice.env mode %v, want 0600: it holds the proxy token", fi.Mode().Perm())
	}
	for _, want := range []string{"HTTPS_PROXY=http://default:", "@gateway.test:3128", "http_proxy=", "SSL_CERT_FILE=/etc/sluice/bundle.pem",
		"NODE_EXTRA_CA_CERTS=/etc/sluice/ca.pem", "REQUESTS_CA_BUNDLE=", "GIT_SSL_CAINFO=", "PIP_CERT=", "CURL_CA_BUNDLE="} {
		if !strings.Contains(string(env), want) {
			t.Errorf("sluice.env lacks %q", want)
		}
	}
	for _, f := range []string{"ca.pem", "bundle.pem"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	if code := Run(context.Background(), []string{"ca", "export", "--data-dir", dataDir, "--tenant", "nobody", "--out", out}, &stdout, &stderr); code == 0 {
		t.Error("export for an unknown tenant succeeded")
	}
}

func TestConfigCheck(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("version: 1\ntenants:\n  acme:\n    token_file: t\n    colour: blue\n"), 0o600)
	var stdout, stderr strings.Builder
	if code := Run(context.Background(), []string{"config", "check", "--config", bad}, &stdout, &stderr); code != 1 {
		t.Fatalf("bad config: exit %d, want 1", code)
	}
	if !strings.Contains(stderr.String(), bad+":5") || !strings.Contains(stderr.String(), "colour") {
		t.Errorf("error does not name file, line and key: %s", stderr.String())
	}
	stderr.Reset()
	if code := Run(context.Background(), []string{"config", "check"}, &stdout, &stderr); code != 0 {
		t.Errorf("embedded default: exit %d: %s", code, stderr.String())
	}
	if code := Run(context.Background(), []string{"frobnicate"}, &stdout, &stderr); code != 2 {
		t.Errorf("unknown command: exit %d, want 2", code)
	}
}

func TestServeRefusesBrokenConfig(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "sluice.yaml")
	// The token file does not exist: nothing may be served.
	os.WriteFile(cfg, []byte("version: 1\ndata_dir: data\ntenants:\n  acme:\n    token_file: missing.token\n"), 0o600)
	var stdout, stderr strings.Builder
	if code := Run(context.Background(), []string{"serve", "--config", cfg, "--proxy", "127.0.0.1:0", "--admin", "127.0.0.1:0"}, &stdout, &stderr); code != 1 {
		t.Fatalf("serve with a missing token file: exit %d, want 1", code)
	}
	if strings.Contains(stdout.String(), "proxy on") {
		t.Error("serve announced a proxy although start-up failed")
	}
}

// sluice serve runs the collector at gateway.GCPercent (an idle tunnel's
// memory depends on it), unless GOGC says otherwise.
func TestServeSetsGCPercent(t *testing.T) {
	if os.Getenv("GOGC") != "" {
		t.Skip("GOGC is set: serve leaves the collector as it says")
	}
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)
	startDefault(t, t.TempDir())
	if got := debug.SetGCPercent(100); got != gateway.GCPercent {
		t.Fatalf("serve runs the collector at GOGC=%d, want %d", got, gateway.GCPercent)
	}
}
