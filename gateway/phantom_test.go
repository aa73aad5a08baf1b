package gateway_test

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-egress/sluice/ca"
	"github.com/sluice-egress/sluice/gateway"
	"github.com/sluice-egress/sluice/gateway/guard"
	"github.com/sluice-egress/sluice/internal/testnet"
	"github.com/sluice-egress/sluice/phantom"
	"github.com/sluice-egress/sluice/scanner"
)

// phantomWorld is a gateway with one phantom credential bound to
// api.example.test, on loopback, with an upstream that echoes credentials.
type phantomWorld struct {
	gw      *gateway.Gateway
	proxy   string
	token   string
	port    int
	cas     *ca.Store
	sink    *recordingSink
	secret  string // path of the real secret's file
	phantom string
	mu      sync.Mutex
	seen    map[string][]string // host -> Authorization values seen upstream
}

const phantomPolicy = `
upstream:
  hosts: {api.example.test: 127.0.0.1, other.example.test: 127.0.0.1}
tenants:
  acme:
    token_file: acme.token
    classes:
      agent:
        allow:
          - host: api.example.test
            ports: [%[1]d]
          - host: other.example.test
            ports: [%[1]d]
`

func newPhantomWorld(t *testing.T, real string) *phantomWorld {
	dir := t.TempDir()
	w := &phantomWorld{token: randomToken(t), sink: &recordingSink{}, seen: map[string][]string{}}
	upCA := testnet.NewTestCA(t, "upstream")
	// The upstream echoes the Authorization it got, in a header and the body,
	// as some APIs do in their errors.
	srv := &http.Server{TLSConfig: upCA.ServerTLS(t, "api.example.test", "other.example.test"),
		Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			w.mu.Lock()
			w.seen[r.Host] = append(w.seen[r.Host], r.Header.Get("Authorization"))
			w.mu.Unlock()
			rw.Header().Set("X-Echo", r.Header.Get("Authorization"))
			fmt.Fprintf(rw, "you sent %q", r.Header.Get("Authorization"))
		})}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	w.port = l.Addr().(*net.TCPAddr).Port
	go srv.ServeTLS(l, "", "")
	t.Cleanup(func() { srv.Close() })

	engine := acmePolicy(t, dir, w.token, fmt.Sprintf(phantomPolicy, w.port))
	w.secret = filepath.Join(dir, "github.secret")
	os.WriteFile(w.secret, []byte(real+"\n"), 0o600)
	key := []byte("0123456789abcdef0123456789abcdef")
	reg := &phantom.Registry{Dir: dir, Key: key, Credentials: map[string][]*phantom.Credential{"acme": {{
		Name: "github", Secret: &phantom.File{Path: w.secret, CheckEvery: time.Nanosecond},
		Hosts: []string{"api.example.test"}, Ports: []int{w.port}, Format: "github-pat", Env: []string{"GITHUB_TOKEN"},
	}}}}
	env, err := reg.Mint("acme", "")
	if err != nil {
		t.Fatal(err)
	}
	_, w.phantom, _ = strings.Cut(env[0], "=")

	w.cas = &ca.Store{Dir: filepath.Join(dir, "ca")}
	roots := x509.NewCertPool()
	roots.AddCert(upCA.Cert)
	w.gw = &gateway.Gateway{
		Policy: engine,
		Leaf:   func(tenant, host string) (*tls.Certificate, error) { return mustAuthority(t, w.cas, tenant).Leaf(host) },
		Dialer: &guard.Dialer{Hosts: engine.UpstreamHosts(), Deny: withoutLoopback(guard.DefaultDeny()),
			Self: func() []netip.Addr { return nil }},
		RootCAs:     roots,
		Events:      w.sink,
		Scanner:     &scanner.Scanner{Key: key, Phantoms: reg},
		Credentials: reg,
	}
	w.proxy = serveOnLoopback(t, w.gw)
	return w
}

func (w *phantomWorld) get(t *testing.T, host, auth string) (*http.Response, string) {
	t.Helper()
	roots := x509.NewCertPool()
	roots.AddCert(mustAuthority(t, w.cas, "acme").Certificate())
	c := (&world{proxyAddr: w.proxy}).client("acme", w.token, roots)
	defer c.CloseIdleConnections()
	req, _ := http.NewRequest("GET", fmt.Sprintf("https://%s:%d/x", host, w.port), nil)
	req.Header.Set("Authorization", auth)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

func (w *phantomWorld) upstreamSaw(host string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.seen[host]...)
}

func TestPhantomSwappedOnlyForItsHost(t *testing.T) {
	real, _ := scanner.FakeSecret("github-pat")
	w := newPhantomWorld(t, real)
	apiHost := fmt.Sprintf("api.example.test:%d", w.port)
	otherHost := fmt.Sprintf("other.example.test:%d", w.port)

	t.Run("bound host gets the real secret, the sandbox sees the phantom back", func(t *testing.T) {
		resp, body := w.get(t, "api.example.test", "Bearer "+w.phantom)
		if resp.StatusCode != 200 {
			t.Fatalf("status %d %s", resp.StatusCode, body)
		}
		if got := w.upstreamSaw(apiHost); len(got) != 1 || got[0] != "Bearer "+real {
			t.Fatalf("upstream saw %d requests, real secret: %v", len(got), len(got) == 1 && got[0] == "Bearer "+real)
		}
		if strings.Contains(body, real) || strings.Contains(resp.Header.Get("X-Echo"), real) {
			t.Error("the real secret echoed by the upstream reached the sandbox")
		}
		if !strings.Contains(body, w.phantom) || resp.Header.Get("X-Echo") != "Bearer "+w.phantom {
			t.Errorf("echo not swapped back to the phantom (header set: %v)", resp.Header.Get("X-Echo") != "")
		}
	})

	t.Run("another host: refused as phantom misuse", func(t *testing.T) {
		resp, _ := w.get(t, "other.example.test", "Bearer "+w.phantom)
		if resp.StatusCode != 403 || resp.Header.Get("Sluice-Reason") != "phantom-misuse" || resp.Header.Get("Sluice-Incident") == "" {
			t.Fatalf("status %d reason %q incident %q", resp.StatusCode, resp.Header.Get("Sluice-Reason"), resp.Header.Get("Sluice-Incident"))
		}
		if n := len(w.upstreamSaw(otherHost)); n != 0 {
			t.Errorf("other host got %d requests", n)
		}
	})

	t.Run("rotation takes effect without a restart", func(t *testing.T) {
		rotated, _ := scanner.FakeSecret("github-pat")
		os.WriteFile(w.secret, []byte(rotated+"\n"), 0o600)
		future := time.Now().Add(2 * time.Second)
		os.Chtimes(w.secret, future, future)
		w.get(t, "api.example.test", "Bearer "+w.phantom)
		got := w.upstreamSaw(apiHost)
		if got[len(got)-1] != "Bearer "+rotated {
			t.Error("the upstream did not get the rotated secret")
		}
	})

	t.Run("a real-looking secret instead of the phantom is an alert", func(t *testing.T) {
		other, _ := scanner.FakeSecret("github-pat")
		before := len(w.sink.reasons())
		w.get(t, "api.example.test", "Bearer "+other)
		var found bool
		for _, r := range w.sink.reasons()[before:] {
			found = found || r == gateway.ReasonRealCredential
		}
		if !found {
			t.Errorf("no %s event: %v", gateway.ReasonRealCredential, w.sink.reasons()[before:])
		}
	})

	t.Run("no event holds the real secret or the phantom", func(t *testing.T) {
		w.sink.mu.Lock()
		defer w.sink.mu.Unlock()
		for _, e := range w.sink.events {
			s := fmt.Sprintf("%+v", e)
			if strings.Contains(s, real) || strings.Contains(s, w.phantom) {
				t.Errorf("event holds a secret: %s", e.Reason)
			}
		}
	})
}
