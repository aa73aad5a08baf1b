package gateway_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/sluice-egress/sluice/gateway"
	"github.com/sluice-egress/sluice/rules"
)

// transparentWorld is the world with its gateway also taking redirected connections:
// 127.0.0.1 is acme's sandbox, every other address nobody's.
type transparentWorld struct {
	*world
	tp                *gateway.Transparent
	tlsAddr, httpAddr string
}

func newTransparentWorld(t *testing.T) *transparentWorld {
	w := newWorld(t)
	tp := &gateway.Transparent{
		Gateway: w.gw,
		Sources: gateway.SourcesFunc(func(a netip.Addr) (rules.Identity, bool) {
			if a == netip.MustParseAddr("127.0.0.1") {
				return rules.Identity{Tenant: "acme", Class: "agent"}, true
			}
			return rules.Identity{}, false
		}),
		// The policy allows the upstreams on their loopback ports: those stand for 443 and 80.
		TLSPort:  w.up.port,
		HTTPPort: w.plainPort,
	}
	listen := func() net.Listener {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	tl, hl := listen(), listen()
	go tp.ServeTLS(tl)
	go tp.ServeHTTP(hl)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		tp.Shutdown(ctx)
	})
	return &transparentWorld{world: w, tp: tp, tlsAddr: tl.Addr().String(), httpAddr: hl.Addr().String()}
}

// dialFrom connects to addr from the loopback address src.
func dialFrom(t *testing.T, src, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	t.Cleanup(func() { c.Close() })
	return c
}

// get sends one request with Host host over c (TLS when sni is not nil) and reads the
// answer; a nil response is a connection that ended first.
func get(t *testing.T, c net.Conn, host, path string, hdr http.Header) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+host+path, nil)
	for k, v := range hdr {
		req.Header[k] = v
	}
	if err := req.Write(c); err != nil {
		return nil
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), req)
	if err != nil {
		return nil
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body = io.NopCloser(strings.NewReader(string(body)))
	return resp
}

func bodyOf(r *http.Response) string {
	b, _ := io.ReadAll(r.Body)
	return string(b)
}

func (w *transparentWorld) tlsFrom(t *testing.T, src, sni string, roots *x509.CertPool) (*tls.Conn, error) {
	t.Helper()
	c := dialFrom(t, src, w.tlsAddr)
	tc := tls.Client(c, &tls.Config{ServerName: sni, RootCAs: roots, NextProtos: []string{"http/1.1"}})
	return tc, tc.Handshake()
}

func TestTransparentTLS(t *testing.T) {
	w := newTransparentWorld(t)
	acme := w.tenantRoots("acme")

	t.Run("allowed: inspected with the tenant CA, by SNI", func(t *testing.T) {
		c, err := w.tlsFrom(t, "127.0.0.1", "api.example.test", acme)
		if err != nil {
			t.Fatal(err)
		}
		resp := get(t, c, "api.example.test", "/v1/x", nil)
		if resp == nil || resp.StatusCode != 200 || bodyOf(resp) != "hello GET /v1/x 0" {
			t.Fatalf("got %+v", resp)
		}
		// Requests inside are decided one by one, as after a CONNECT.
		resp = get(t, c, "api.example.test", "/admin", nil)
		if resp == nil || resp.StatusCode != 403 || resp.Header.Get("Sluice-Reason") != rules.ReasonPathNotAllowed {
			t.Fatalf("path outside the entry: %+v", resp)
		}
	})
	t.Run("SNI differs from Host", func(t *testing.T) {
		before := len(w.up.requests())
		c, err := w.tlsFrom(t, "127.0.0.1", "other.example.test", acme)
		if err != nil {
			t.Fatal(err)
		}
		resp := get(t, c, "api.example.test", "/v1/x", nil)
		if resp == nil || resp.StatusCode != 403 || resp.Header.Get("Sluice-Reason") != gateway.ReasonDomainFronting {
			t.Fatalf("got %+v", resp)
		}
		if n := len(w.up.requests()); n != before {
			t.Fatalf("the upstream got %d requests", n-before)
		}
	})
	t.Run("missing SNI", func(t *testing.T) {
		c := dialFrom(t, "127.0.0.1", w.tlsAddr)
		// The test client skips verification only to send a ClientHello without a name.
		tc := tls.Client(c, &tls.Config{InsecureSkipVerify: true})
		if err := tc.Handshake(); err == nil {
			t.Fatal("a handshake without SNI completed")
		}
		waitFor(t, func() bool { return w.sink.has(gateway.ReasonSNIMissing) })
	})
	t.Run("denied: refused by the gateway itself, with a reason", func(t *testing.T) {
		c, err := w.tlsFrom(t, "127.0.0.1", "evil.example.test", acme)
		if err != nil {
			t.Fatalf("the refusal's handshake: %v", err)
		}
		if cn := c.ConnectionState().PeerCertificates[0].Subject.CommonName; cn != "evil.example.test" && len(c.ConnectionState().PeerCertificates[0].DNSNames) == 0 {
			t.Fatalf("leaf %q", cn)
		}
		resp := get(t, c, "evil.example.test", "/", nil)
		if resp == nil || resp.StatusCode != 403 || resp.Header.Get("Sluice-Reason") != rules.ReasonHostNotAllowed {
			t.Fatalf("got %+v", resp)
		}
		if get(t, c, "evil.example.test", "/", nil) != nil {
			t.Fatal("a second request on a refused connection was answered")
		}
	})
	t.Run("denied for another tenant's identity", func(t *testing.T) {
		// acme's sandbox is acme's, whatever it claims: globex's credentials mean nothing here.
		c, err := w.tlsFrom(t, "127.0.0.1", "evil.example.test", acme)
		if err != nil {
			t.Fatal(err)
		}
		resp := get(t, c, "evil.example.test", "/", http.Header{"Proxy-Authorization": {"Basic Z2xvYmV4Ong="}})
		if resp == nil || resp.StatusCode != 403 {
			t.Fatalf("got %+v", resp)
		}
	})
	t.Run("passthrough: the real certificate, blind", func(t *testing.T) {
		up := x509.NewCertPool()
		up.AddCert(w.upCA.Cert)
		c, err := w.tlsFrom(t, "127.0.0.1", "pass.example.test", up)
		if err != nil {
			t.Fatal(err)
		}
		resp := get(t, c, "pass.example.test", "/anything", nil)
		if resp == nil || resp.StatusCode != 200 {
			t.Fatalf("got %+v", resp)
		}
	})
	t.Run("unknown source", func(t *testing.T) {
		if _, err := w.tlsFrom(t, "127.0.0.2", "api.example.test", acme); err == nil {
			t.Fatal("an unregistered address completed a handshake")
		}
		waitFor(t, func() bool { return w.sink.has(gateway.ReasonUnknownSource) })
	})
	t.Run("a doctor probe is refused and marked", func(t *testing.T) {
		c, err := w.tlsFrom(t, "127.0.0.1", "probe.example.test", acme)
		if err != nil {
			t.Fatal(err)
		}
		resp := get(t, c, "probe.example.test", "/", http.Header{gateway.ProbeHeader: {gateway.ProbeDoctor}})
		if resp == nil || resp.StatusCode != 403 {
			t.Fatalf("got %+v", resp)
		}
		waitFor(t, func() bool {
			w.sink.mu.Lock()
			defer w.sink.mu.Unlock()
			for _, e := range w.sink.events {
				if e.Host == "probe.example.test" {
					return e.Probe
				}
			}
			return false
		})
	})
}

func TestTransparentHTTP(t *testing.T) {
	w := newTransparentWorld(t)
	tests := []struct {
		name, src, host string
		hdr             http.Header
		status          int
		reason          string
	}{
		{"allowed by Host", "127.0.0.1", "plain.example.test", nil, 200, ""},
		{"the gateway's credentials never travel on", "127.0.0.1", "plain.example.test",
			http.Header{"Proxy-Authorization": {"Basic YWNtZTp4"}}, 200, ""},
		{"denied host", "127.0.0.1", "evil.example.test", nil, 403, rules.ReasonHostNotAllowed},
		{"Host names another port", "127.0.0.1", "plain.example.test:81", nil, 403, gateway.ReasonDomainFronting},
		{"unknown source", "127.0.0.2", "plain.example.test", nil, 403, gateway.ReasonUnknownSource},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := dialFrom(t, tc.src, w.httpAddr)
			resp := get(t, c, tc.host, "/p", tc.hdr)
			if resp == nil || resp.StatusCode != tc.status || resp.Header.Get("Sluice-Reason") != tc.reason {
				t.Fatalf("got %+v, want %d %q", resp, tc.status, tc.reason)
			}
			if tc.status == 200 {
				if b := bodyOf(resp); b != `plain GET /p auth=""` {
					t.Fatalf("body %q", b)
				}
			}
		})
	}
	t.Run("no Host", func(t *testing.T) {
		c := dialFrom(t, "127.0.0.1", w.httpAddr)
		io.WriteString(c, "GET /p HTTP/1.0\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || resp.StatusCode != 400 {
			t.Fatalf("got %v %v", resp, err)
		}
	})
}

// A redirected plain-HTTP connection that has sent nothing yet does not hold
// Shutdown for net/http's 5 s grace for new connections.
func TestTransparentShutdownClosesSilentConnections(t *testing.T) {
	w := newTransparentWorld(t)
	c := dialFrom(t, "127.0.0.1", w.httpAddr)
	// Once a request on another connection was answered, the silent one was accepted
	// before it (one accept loop).
	if resp := get(t, dialFrom(t, "127.0.0.1", w.httpAddr), "plain.example.test", "/p", nil); resp == nil || resp.StatusCode != 200 {
		t.Fatalf("the second connection: %+v, want 200", resp)
	}
	mustShutdownClosing(t, w.tp.Shutdown, c)
}
