package e2e

import (
	"bufio"
	"context"
	"crypto/x509"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-egress/sluice/internal/testnet"
)

// scanPolicy allows two hosts; the scanner redacts AWS key ids, blocks
// everything else it finds, and binds GitLab tokens to api.example.test.
const scanPolicy = `
version: 1
listen:
  proxy: 192.0.2.1:3128
data_dir: data
upstream:
  extra_roots: [upstream-ca.pem]
  hosts:
    api.example.test: 198.51.100.10
    other.example.test: 203.0.113.10
scanning:
  max_body_bytes: 1MiB
  actions:
    aws-access-token: redact
  bindings:
    - rule: gitlab-pat
      hosts: [api.example.test]
tenants:
  acme:
    token_file: acme.token
    classes:
      agent:
        allow:
          - host: api.example.test
          - host: other.example.test
`

// scanEnv is a running gateway with a scanner between a sandbox and two
// recording upstreams.
type scanEnv struct {
	w      *testnet.World
	dir    string
	cfg    string
	token  string
	api    *testnet.Upstream
	other  *testnet.Upstream
	stderr *syncBuffer
	roots  *x509.CertPool
}

func startScan(t *testing.T) *scanEnv {
	w := testnet.New(t)
	e := &scanEnv{w: w, dir: t.TempDir(), token: randomToken(t)}
	upCA := testnet.NewTestCA(t, "internet")
	e.api = w.ServeUpstream(t, testnet.HostPort(apiAddr, 443), upCA.ServerTLS(t, "api.example.test"), nil)
	e.other = w.ServeUpstream(t, testnet.HostPort(otherAddr, 443), upCA.ServerTLS(t, "other.example.test"), nil)
	mustWrite(t, filepath.Join(e.dir, "acme.token"), e.token+"\n", 0o600)
	upCA.WritePEM(t, e.dir)
	os.Rename(filepath.Join(e.dir, "internet-ca.pem"), filepath.Join(e.dir, "upstream-ca.pem"))
	e.cfg = filepath.Join(e.dir, "sluice.yaml")
	mustWrite(t, e.cfg, scanPolicy, 0o600)

	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	gw := w.Gateway.Command(ctx, sluiceBin, "serve", "--config", e.cfg, "--drain-timeout", "2s")
	stdout, err := gw.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	e.stderr = &syncBuffer{}
	gw.Stderr = e.stderr
	if err := gw.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	exited := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		once := false
		for sc.Scan() {
			if !once && strings.Contains(sc.Text(), "proxy on") {
				once = true
				close(ready)
			}
		}
		exited <- gw.Wait()
	}()
	t.Cleanup(func() {
		if gw.ProcessState == nil {
			gw.Process.Kill()
		}
		if t.Failed() {
			t.Logf("gateway log:\n%s", e.stderr.String())
		}
	})
	select {
	case <-ready:
	case err := <-exited:
		t.Fatalf("gateway exited at start: %v\n%s", err, e.stderr.String())
	case <-time.After(30 * time.Second):
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

// client is a Go client in the sandbox, proxied as tenant acme.
func (e *scanEnv) client(t *testing.T) *http.Client {
	proxy := &url.URL{Scheme: "http", User: url.UserPassword("acme", e.token), Host: "192.0.2.1:3128"}
	c := e.w.SandboxHTTPClient(proxy, e.roots)
	c.Timeout = 20 * time.Second
	t.Cleanup(c.CloseIdleConnections)
	return c
}
