package gateway_test

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-egress/sluice/ca"
	"github.com/sluice-egress/sluice/gateway"
	"github.com/sluice-egress/sluice/gateway/guard"
	"github.com/sluice-egress/sluice/internal/testnet"
	"github.com/sluice-egress/sluice/phantom"
	"github.com/sluice-egress/sluice/scanner"
)

// echoWorld is a gateway on loopback in front of one upstream handler,
// served over TLS (api, open and ws.example.test) and plain HTTP
// (plain.example.test), with an optional phantom credential bound to
// api.example.test. Tests give the handler: an upstream that echoes,
// forges or stalls.
type echoWorld struct {
	gw        *gateway.Gateway
	proxy     string
	token     string
	port      int // the TLS upstream's
	plainPort int
	cas       *ca.Store
	sink      *recordingSink
	reg       *phantom.Registry
	phantom   string // the credential's phantom, "" without one
	real      string // its real secret
}

var discardTestLog = log.New(io.Discard, "", 0)

// echoPolicy: %[1]d is the TLS upstream's port, %[2]d the plain one's.
const echoPolicy = `
upstream:
  hosts: {api.example.test: 127.0.0.1, open.example.test: 127.0.0.1, ws.example.test: 127.0.0.1, plain.example.test: 127.0.0.1}
tenants:
  acme:
    token_file: acme.token
    classes:
      agent:
        allow:
          - host: api.example.test
            ports: [%[1]d]
            websocket: true
          - host: open.example.test
            ports: [%[1]d]
            methods: [GET, POST]
            paths: ["/v1/"]
          - host: ws.example.test
            ports: [%[1]d]
            websocket: true
          - host: plain.example.test
            ports: [%[2]d]
`

// newEchoWorld serves h upstream. cred, if set, is bound to
// api.example.test on the upstream's port; its secret is a fresh fake of
// kind secretKind.
func newEchoWorld(t *testing.T, h http.Handler, cred *phantom.Credential, secretKind string) *echoWorld {
	t.Helper()
	dir := t.TempDir()
	w := &echoWorld{token: randomToken(t), sink: &recordingSink{}}
	upCA := testnet.NewTestCA(t, "upstream")
	srv := &http.Server{TLSConfig: upCA.ServerTLS(t, "api.example.test", "open.example.test", "ws.example.test"),
		Handler: h, ErrorLog: discardTestLog}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	w.port = l.Addr().(*net.TCPAddr).Port
	go srv.ServeTLS(l, "", "")
	t.Cleanup(func() { srv.Close() })
	pl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	w.plainPort = pl.Addr().(*net.TCPAddr).Port
	plain := &http.Server{Handler: h, ErrorLog: discardTestLog}
	go plain.Serve(pl)
	t.Cleanup(func() { plain.Close() })

	engine := acmePolicy(t, dir, w.token, fmt.Sprintf(echoPolicy, w.port, w.plainPort))
	key := []byte("0123456789abcdef0123456789abcdef")
	w.reg = &phantom.Registry{Dir: dir, Key: key}
	if cred != nil {
		w.real, err = scanner.FakeSecret(secretKind)
		if err != nil {
			t.Fatal(err)
		}
		secret := filepath.Join(dir, "cred.secret")
		os.WriteFile(secret, []byte(w.real+"\n"), 0o600)
		cred.Secret = &phantom.File{Path: secret}
		cred.Hosts = []string{"api.example.test"}
		cred.Ports = []int{w.port}
		cred.Env = []string{"CRED"}
		w.reg.Credentials = map[string][]*phantom.Credential{"acme": {cred}}
		env, err := w.reg.Mint("acme", "")
		if err != nil {
			t.Fatal(err)
		}
		_, w.phantom, _ = strings.Cut(env[0], "=")
	}
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
		Scanner:     &scanner.Scanner{Key: key, Phantoms: w.reg},
		Credentials: w.reg,
	}
	w.proxy = serveOnLoopback(t, w.gw)
	return w
}

// client is Go's client through the gateway, trusting acme's CA. It asks
// for no compression of its own accord (DisableCompression), so that tests
// see the encodings the gateway let through.
func (w *echoWorld) client(t *testing.T) *http.Client {
	t.Helper()
	roots := x509.NewCertPool()
	roots.AddCert(mustAuthority(t, w.cas, "acme").Certificate())
	proxy := &url.URL{Scheme: "http", User: url.UserPassword("acme", w.token), Host: w.proxy}
	c := &http.Client{
		Transport: &http.Transport{Proxy: http.ProxyURL(proxy), TLSClientConfig: &tls.Config{RootCAs: roots},
			DisableCompression: true},
		Timeout: 10 * time.Second,
	}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// url is an https URL of host on the TLS upstream's port.
func (w *echoWorld) url(host, path string) string {
	return "https://" + net.JoinHostPort(host, strconv.Itoa(w.port)) + path
}

// do sends req and returns the response with its body read (and trailers).
func (w *echoWorld) do(t *testing.T, req *http.Request) (*http.Response, string) {
	t.Helper()
	resp, err := w.client(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

// rawTunnel opens a CONNECT tunnel to host on the TLS upstream's port and
// TLS inside it, speaking HTTP/1.1.
func (w *echoWorld) rawTunnel(t *testing.T, host string) (*tls.Conn, *bufio.Reader) {
	t.Helper()
	return acmeTunnel(t, w.proxy, w.token, w.cas, host, w.port)
}
