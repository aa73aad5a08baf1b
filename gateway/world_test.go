package gateway_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-egress/sluice/ca"
	"github.com/sluice-egress/sluice/config"
	"github.com/sluice-egress/sluice/gateway"
	"github.com/sluice-egress/sluice/gateway/guard"
	"github.com/sluice-egress/sluice/incident"
	"github.com/sluice-egress/sluice/internal/testnet"
	"github.com/sluice-egress/sluice/rules"
)

// world is a gateway on loopback with real upstreams, real CAs and a real
// policy engine. Loopback is taken out of the guard's deny ranges (the
// upstreams live there); the deny tests use the other ranges and a separate
// test shows loopback refused by the default ranges.
type world struct {
	t         testing.TB
	gw        *gateway.Gateway
	proxyAddr string
	tokens    map[string]string
	cas       *ca.Store
	upCA      *testnet.TestCA
	sink      *recordingSink
	up        *upstream // trusted, names *.example.test
	badUp     *upstream // certificate from a CA the gateway does not trust
	dialed    chan string
	plainPort int // a plain HTTP upstream that echoes Proxy-Authorization
}

// upstream is a TLS server on loopback that records the requests it serves.
type upstream struct {
	port int
	mu   sync.Mutex
	reqs []*http.Request
	conn int
}

func (u *upstream) requests() []*http.Request {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]*http.Request(nil), u.reqs...)
}

// worldPolicy is the config template: %[1]d is the trusted upstream's port,
// %[2]d the untrusted one's, %[3]d the plain HTTP one's.
const worldPolicy = `
version: 1
upstream:
  hosts:
    api.example.test: 127.0.0.1
    other.example.test: 127.0.0.1
    deep.sub.wild.example.test: 127.0.0.1
    ws.example.test: 127.0.0.1
    pass.example.test: 127.0.0.1
    bad.example.test: 127.0.0.1
    private.example.test: 10.0.0.1
    metadata.example.test: 169.254.169.254
    plain.example.test: 127.0.0.1
tenants:
  acme:
    token_file: acme.token
    token_classes: [agent, validation]
    classes:
      agent:
        allow:
          - host: api.example.test
            ports: [%[1]d]
            methods: [GET, POST]
            paths: ["/v1/", "/slow"]
          - host: other.example.test
            ports: [%[1]d]
          - host: "*.wild.example.test"
            ports: [%[1]d]
          - host: ws.example.test
            ports: [%[1]d]
            websocket: true
          - host: bad.example.test
            ports: [%[2]d]
          - host: private.example.test
            ports: [%[1]d]
          - host: metadata.example.test
            ports: [%[1]d]
          - host: plain.example.test
            ports: [%[3]d]
            methods: [GET]
        passthrough:
          - host: pass.example.test
            ports: [%[1]d]
      validation:
        allow: []
  globex:
    token_file: globex.token
    classes:
      agent:
        allow:
          - host: other.example.test
            ports: [%[1]d]
      # broader than agent, and not among globex's token classes (the default:
      # agent only): reached with a run token only.
      broad:
        allow:
          - host: api.example.test
            ports: [%[1]d]
`

func newWorld(t testing.TB) *world {
	t.Helper()
	return newWorldWith(t, nil)
}

// newWorldWith is newWorld with configure applied to the gateway before it
// serves (for what Serve reads once, as the listener's limits).
func newWorldWith(t testing.TB, configure func(*gateway.Gateway)) *world {
	t.Helper()
	dir := t.TempDir()
	w := &world{t: t, tokens: map[string]string{}, sink: &recordingSink{}, dialed: make(chan string, 100)}
	w.upCA = testnet.NewTestCA(t, "upstream")
	untrusted := testnet.NewTestCA(t, "untrusted")
	names := []string{"api.example.test", "other.example.test", "deep.sub.wild.example.test",
		"ws.example.test", "pass.example.test", "private.example.test", "metadata.example.test"}
	w.up = startUpstream(t, w.upCA.ServerTLS(t, names...))
	w.badUp = startUpstream(t, untrusted.ServerTLS(t, "bad.example.test"))
	w.plainPort = startPlain(t)

	for _, tenant := range []string{"acme", "globex"} {
		tok := randomToken(t)
		w.tokens[tenant] = tok
		if err := os.WriteFile(filepath.Join(dir, tenant+".token"), []byte(tok+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfgPath := filepath.Join(dir, "sluice.yaml")
	if err := os.WriteFile(cfgPath, fmt.Appendf(nil, worldPolicy, w.up.port, w.badUp.port, w.plainPort), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatalf("load policy: %v", err)
	}
	engine, err := rules.Compile(cfg.Policy(), cfg.Token)
	if err != nil {
		t.Fatalf("compile policy: %v", err)
	}
	w.cas = &ca.Store{Dir: filepath.Join(dir, "ca")}
	roots := x509.NewCertPool()
	roots.AddCert(w.upCA.Cert)
	dialer := &guard.Dialer{
		Hosts: engine.UpstreamHosts(),
		Deny:  withoutLoopback(guard.DefaultDeny()),
		Self:  func() []netip.Addr { return nil },
	}
	dialer.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		select {
		case w.dialed <- addr:
		default:
		}
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	w.gw = &gateway.Gateway{
		Policy:  engine,
		Leaf:    func(tenant, host string) (*tls.Certificate, error) { return mustAuthority(t, w.cas, tenant).Leaf(host) },
		Dialer:  dialer,
		RootCAs: roots,
		Events:  w.sink,
	}
	if configure != nil {
		configure(w.gw)
	}
	w.proxyAddr = serveOnLoopback(t, w.gw)
	return w
}

// acmePolicy writes token as tenant acme's token file and policy as the
// config into dir, and compiles it, as sluice serve would load it.
func acmePolicy(t testing.TB, dir, token, policy string) *rules.Engine {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "acme.token"), []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "sluice.yaml")
	if err := os.WriteFile(path, []byte(policy), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatalf("load policy: %v", err)
	}
	engine, err := rules.Compile(cfg.Policy(), cfg.Token)
	if err != nil {
		t.Fatalf("compile policy: %v", err)
	}
	return engine
}

// serveOnLoopback serves gw on a fresh loopback port until the test ends and
// returns its address.
func serveOnLoopback(t testing.TB, gw *gateway.Gateway) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go gw.Serve(l)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		gw.Shutdown(ctx)
	})
	return l.Addr().String()
}

func withoutLoopback(ps []netip.Prefix) []netip.Prefix {
	var out []netip.Prefix
	for _, p := range ps {
		if p.Contains(netip.MustParseAddr("127.0.0.1")) || p.Contains(netip.IPv6Loopback()) {
			continue
		}
		out = append(out, p)
	}
	return out
}

func startUpstream(t testing.TB, cfg *tls.Config) *upstream {
	t.Helper()
	u := &upstream{}
	mux := http.NewServeMux()
	mux.HandleFunc("/slow", func(rw http.ResponseWriter, r *http.Request) {
		time.Sleep(500 * time.Millisecond)
		io.WriteString(rw, "slow done")
	})
	mux.HandleFunc("/ws", func(rw http.ResponseWriter, r *http.Request) {
		if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			http.Error(rw, "want upgrade", http.StatusBadRequest)
			return
		}
		conn, brw, err := http.NewResponseController(rw).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
		brw.Flush()
		// Echo one line: enough to show bytes flow both ways after the upgrade.
		line, _ := brw.ReadString('\n')
		brw.WriteString("echo: " + line)
		brw.Flush()
	})
	mux.HandleFunc("/wsecho", wsEcho)
	mux.HandleFunc("/sum", func(rw http.ResponseWriter, r *http.Request) {
		h := sha256.New()
		n, err := io.Copy(h, r.Body)
		if err != nil {
			http.Error(rw, err.Error(), http.StatusBadRequest)
			return
		}
		fmt.Fprintf(rw, "%d %x", n, h.Sum(nil))
	})
	mux.HandleFunc("/", func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rw.Header().Set("X-Upstream-Host", r.Host)
		fmt.Fprintf(rw, "hello %s %s %d", r.Method, r.URL.Path, len(body))
	})
	srv := &http.Server{
		Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			u.mu.Lock()
			u.reqs = append(u.reqs, r.Clone(context.Background()))
			u.mu.Unlock()
			mux.ServeHTTP(rw, r)
		}),
		ConnState: func(c net.Conn, s http.ConnState) {
			if s == http.StateNew {
				u.mu.Lock()
				u.conn++
				u.mu.Unlock()
			}
		},
		TLSConfig: cfg,
		ErrorLog:  nil,
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u.port = l.Addr().(*net.TCPAddr).Port
	go srv.ServeTLS(l, "", "")
	t.Cleanup(func() { srv.Close() })
	return u
}

func startPlain(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(rw, "plain %s %s auth=%q", r.Method, r.URL.Path, r.Header.Get("Proxy-Authorization"))
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return l.Addr().(*net.TCPAddr).Port
}

func randomToken(t testing.TB) string {
	t.Helper()
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

func mustAuthority(t testing.TB, s *ca.Store, tenant string) *ca.Authority {
	a, err := s.Authority(tenant)
	if err != nil {
		t.Errorf("authority %s: %v", tenant, err)
		return nil
	}
	return a
}

// tenantRoots trusts only that tenant's CA.
func (w *world) tenantRoots(tenant string) *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(mustAuthority(w.t, w.cas, tenant).Certificate())
	return p
}

// client is Go's http client through the gateway as user with token,
// trusting roots.
func (w *world) client(user, token string, roots *x509.CertPool) *http.Client {
	proxy := &url.URL{Scheme: "http", User: url.UserPassword(user, token), Host: w.proxyAddr}
	return &http.Client{
		Transport: &http.Transport{
			Proxy:             http.ProxyURL(proxy),
			TLSClientConfig:   &tls.Config{RootCAs: roots},
			ForceAttemptHTTP2: true,
		},
		Timeout: 10 * time.Second,
	}
}

func (w *world) acme() *http.Client { return w.client("acme", w.tokens["acme"], w.tenantRoots("acme")) }

func (w *world) url(host, path string) string {
	return "https://" + net.JoinHostPort(host, strconv.Itoa(w.up.port)) + path
}

// connect opens a CONNECT tunnel by hand and returns the raw connection
// after the gateway's answer, or the answer when it is not 200.
func (w *world) connect(user, token, authority string) (net.Conn, *http.Response) {
	w.t.Helper()
	c, err := net.Dial("tcp", w.proxyAddr)
	if err != nil {
		w.t.Fatal(err)
	}
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + token))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\nProxy-Authorization: Basic %s\r\n\r\n", authority, authority, auth)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		w.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		c.Close()
		return nil, resp
	}
	if br.Buffered() > 0 {
		w.t.Fatal("gateway sent bytes after its CONNECT answer")
	}
	return c, resp
}

// acmeTunnel opens an inspected tunnel for tenant acme to host:port on the
// gateway at proxy, and TLS inside it for HTTP/1.1 that trusts acme's CA
// alone; the connection gives up after 10s.
func acmeTunnel(t testing.TB, proxy, token string, cas *ca.Store, host string, port int) (*tls.Conn, *bufio.Reader) {
	t.Helper()
	c, resp := (&world{t: t, proxyAddr: proxy}).connect("acme", token, net.JoinHostPort(host, strconv.Itoa(port)))
	if c == nil {
		t.Fatalf("CONNECT refused: %d %s", resp.StatusCode, resp.Header.Get("Sluice-Reason"))
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	roots := x509.NewCertPool()
	roots.AddCert(mustAuthority(t, cas, "acme").Certificate())
	tc := tls.Client(c, &tls.Config{ServerName: host, RootCAs: roots, NextProtos: []string{"http/1.1"}})
	if err := tc.Handshake(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tc.Close() })
	return tc, bufio.NewReader(tc)
}

// recordingSink keeps every event.
type recordingSink struct {
	mu     sync.Mutex
	events []incident.Incident
}

func (s *recordingSink) Emit(_ context.Context, e incident.Incident) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, e)
	return "inc-" + strconv.Itoa(len(s.events)), nil
}

func (s *recordingSink) reasons() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, e := range s.events {
		out = append(out, e.Reason)
	}
	return out
}

func (s *recordingSink) has(reason string) bool {
	for _, r := range s.reasons() {
		if r == reason {
			return true
		}
	}
	return false
}

// wsEcho is a WebSocket upstream that echoes every data frame as one
// unmasked frame and answers a Close with a Close.
func wsEcho(rw http.ResponseWriter, r *http.Request) {
	conn, brw, err := http.NewResponseController(rw).Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	fmt.Fprintf(brw, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n",
		wsAccept(r.Header.Get("Sec-WebSocket-Key")))
	brw.Flush()
	for {
		f, err := readFrame(brw.Reader)
		if err != nil {
			return
		}
		switch f.op {
		case 0x8:
			writeFrame(conn, true, 0x8, f.payload, false)
			return
		case 0x1, 0x2:
			writeFrame(conn, true, f.op, f.payload, false)
		}
	}
}

// snapshot returns a copy of the events so far.
func (s *recordingSink) snapshot() []incident.Incident {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]incident.Incident(nil), s.events...)
}
