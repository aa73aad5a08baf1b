package gateway_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-egress/sluice/gateway"
	"github.com/sluice-egress/sluice/gateway/guard"
	"github.com/sluice-egress/sluice/rules"
	"github.com/sluice-egress/sluice/scanner"
)

// flipPolicy lets every client with its token in as a run of tenant acme,
// and allows everything until denied is set.
type flipPolicy struct {
	token  string
	denied atomic.Bool
}

func (p *flipPolicy) Identify(user, token string) (rules.Identity, error) {
	if token != p.token {
		return rules.Identity{}, errors.New("bad token")
	}
	return rules.Identity{Tenant: "acme", Class: "agent", Run: "run-1"}, nil
}

func (p *flipPolicy) Decide(q rules.Query) rules.Decision {
	if p.denied.Load() {
		return rules.Decision{Action: rules.Deny, Reason: rules.ReasonHostNotAllowed}
	}
	if q.Stage == rules.StageConnect {
		return rules.Decision{Action: rules.Passthrough}
	}
	return rules.Decision{Action: rules.Allow}
}

func (p *flipPolicy) AllowedAddresses(rules.Decision) []netip.Prefix { return nil }

// fixedDialer dials addr whatever the target.
type fixedDialer struct{ addr string }

func (d fixedDialer) Dial(ctx context.Context, _ guard.Target) (net.Conn, error) {
	var nd net.Dialer
	return nd.DialContext(ctx, "tcp", d.addr)
}

// rawWSUpstream answers every upgrade with 101 and then echoes raw bytes.
func rawWSUpstream(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		conn, brw, err := http.NewResponseController(rw).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
		brw.Flush()
		io.Copy(conn, brw)
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return l.Addr().String()
}

// plainWebSocket opens a WebSocket in plain HTTP through the proxy port.
func plainWebSocket(t *testing.T, proxy, token string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", proxy)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	auth := base64.StdEncoding.EncodeToString([]byte("acme:" + token))
	fmt.Fprintf(c, "GET http://ws.example.test/chat HTTP/1.1\r\nHost: ws.example.test\r\nProxy-Authorization: Basic %s\r\n"+
		"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n", auth)
	br := bufio.NewReader(c)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	fmt.Fprint(c, "ping\n")
	if line, err := br.ReadString('\n'); err != nil || line != "ping\n" {
		t.Fatalf("echo: %q %v", line, err)
	}
	c.SetReadDeadline(time.Time{})
	return c, br
}

// closedWithin reports whether c is closed by the far end within d.
func closedWithin(c net.Conn, br *bufio.Reader, d time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, br)
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

func newFlipGateway(t *testing.T) (*gateway.Gateway, *flipPolicy) {
	p := &flipPolicy{token: randomToken(t)}
	return &gateway.Gateway{Policy: p, Dialer: fixedDialer{rawWSUpstream(t)}, Events: &recordingSink{}}, p
}

// Hole 6: a plain-HTTP WebSocket is tracked like a tunnel: ending its run or
// a policy change that refuses it closes it.
func TestPlainWebSocketIsTracked(t *testing.T) {
	gw, p := newFlipGateway(t)
	proxy := serveOnLoopback(t, gw)

	c, br := plainWebSocket(t, proxy, p.token)
	if n := gw.OpenTunnels(); n != 1 {
		t.Fatalf("open tunnels with one WebSocket: %d", n)
	}
	if n := gw.CloseRun("run-1"); n != 1 {
		t.Fatalf("CloseRun closed %d", n)
	}
	if !closedWithin(c, br, 2*time.Second) {
		t.Fatal("the WebSocket outlived its run")
	}

	c, br = plainWebSocket(t, proxy, p.token)
	// The first WebSocket's tunnel is untracked once its proxy copy ends,
	// a moment after the client saw it closed: count only the second.
	for deadline := time.Now().Add(2 * time.Second); gw.OpenTunnels() != 1; {
		if time.Now().After(deadline) {
			t.Fatalf("open tunnels after the first closed: %d, want 1", gw.OpenTunnels())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := gw.PolicyChanged(); n != 0 {
		t.Fatalf("PolicyChanged closed %d with the policy unchanged", n)
	}
	p.denied.Store(true)
	if n := gw.PolicyChanged(); n != 1 {
		t.Fatalf("PolicyChanged closed %d, want 1", n)
	}
	if !closedWithin(c, br, 2*time.Second) {
		t.Fatal("the WebSocket outlived the policy that allowed it")
	}
	waitFor(t, func() bool { return gw.OpenTunnels() == 0 })
}

// Hole 6: WebSockets and passthrough tunnels close when idle, and every
// tunnel at its maximum lifetime.
func TestTunnelTimeouts(t *testing.T) {
	t.Run("websocket idle", func(t *testing.T) {
		gw, p := newFlipGateway(t)
		gw.Limits.TunnelIdleTimeout = 500 * time.Millisecond
		c, br := plainWebSocket(t, serveOnLoopback(t, gw), p.token)
		start := time.Now()
		if !closedWithin(c, br, 3*time.Second) {
			t.Fatal("an idle WebSocket stayed open")
		}
		if d := time.Since(start); d < 400*time.Millisecond {
			t.Fatalf("closed after %v, before the idle timeout", d)
		}
	})
	t.Run("websocket kept busy is not idle", func(t *testing.T) {
		gw, p := newFlipGateway(t)
		gw.Limits.TunnelIdleTimeout = 500 * time.Millisecond
		c, br := plainWebSocket(t, serveOnLoopback(t, gw), p.token)
		for range 8 {
			time.Sleep(200 * time.Millisecond)
			fmt.Fprint(c, "tick\n")
			c.SetReadDeadline(time.Now().Add(2 * time.Second))
			if _, err := br.ReadString('\n'); err != nil {
				t.Fatalf("busy WebSocket closed: %v", err)
			}
		}
	})
	t.Run("passthrough idle", func(t *testing.T) {
		w := newWorld(t)
		w.gw.Limits.TunnelIdleTimeout = 500 * time.Millisecond
		c := passthroughTLS(t, w)
		if !closedWithin(c, bufio.NewReader(c), 3*time.Second) {
			t.Fatal("an idle passthrough tunnel stayed open")
		}
	})
	t.Run("max lifetime", func(t *testing.T) {
		gw, p := newFlipGateway(t)
		gw.Limits.TunnelMaxLifetime = time.Second
		c, br := plainWebSocket(t, serveOnLoopback(t, gw), p.token)
		start := time.Now()
		for time.Since(start) < 3*time.Second {
			fmt.Fprint(c, "tick\n")
			c.SetReadDeadline(time.Now().Add(time.Second))
			if _, err := br.ReadString('\n'); err != nil {
				if d := time.Since(start); d < 800*time.Millisecond {
					t.Fatalf("closed after %v", d)
				}
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Fatal("a busy WebSocket outlived TunnelMaxLifetime")
	})
}

// passthroughTLS opens a passthrough tunnel and a TLS session through it.
func passthroughTLS(t *testing.T, w *world) *tls.Conn {
	t.Helper()
	c, resp := w.connect("acme", w.tokens["acme"], net.JoinHostPort("pass.example.test", strconv.Itoa(w.up.port)))
	if c == nil {
		t.Fatalf("CONNECT: %d", resp.StatusCode)
	}
	tc := tls.Client(c, &tls.Config{ServerName: "pass.example.test", RootCAs: w.upCA.Pool()})
	if err := tc.Handshake(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tc.Close() })
	return tc
}

// panicPolicy panics deciding requests for one host.
type panicPolicy struct {
	gatewayPolicy
	host string
}

func (p panicPolicy) Decide(q rules.Query) rules.Decision {
	if q.Host == p.host && q.Stage == rules.StageRequest {
		panic("policy bug")
	}
	return p.gatewayPolicy.Decide(q)
}

// Hole 3: a panic while handling a request answers that request and records
// an incident; the gateway goes on.
func TestPanicInRequestIsAnswered(t *testing.T) {
	w := newWorld(t)
	w.gw.Policy = panicPolicy{gatewayPolicy: w.gw.Policy, host: "other.example.test"}
	w.gw.Scanner = failingScanner{ScanFn: func(ctx context.Context, req *scanner.Request) (*scanner.Result, error) {
		if strings.HasPrefix(req.URL.Path, "/v1/boom") {
			panic("scanner bug")
		}
		return &scanner.Result{Body: req.Body, BodyLen: -1}, nil
	}}
	for _, tc := range []struct {
		host, path string
		status     int
		reason     string
	}{
		{"other.example.test", "/x", http.StatusBadGateway, gateway.ReasonInternalError},
		{"api.example.test", "/v1/boom", http.StatusServiceUnavailable, gateway.ReasonInternalError},
	} {
		c, br := w.tunnelAs(t, "acme", tc.host)
		fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s:%d\r\n\r\n", tc.path, tc.host, w.up.port)
		resp := answer(t, c, br, 3*time.Second)
		if resp.StatusCode != tc.status || reasonOf(resp) != tc.reason {
			t.Fatalf("%s%s: %d %q, want %d %s", tc.host, tc.path, resp.StatusCode, reasonOf(resp), tc.status, tc.reason)
		}
		if !w.sink.has(tc.reason) {
			t.Fatalf("no incident %s: %q", tc.reason, w.sink.reasons())
		}
	}
	resp, err := w.acme().Get(w.url("api.example.test", "/v1/after"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("after the panics: %d", resp.StatusCode)
	}
}

// panicScanner panics on a WebSocket message that says boom.
type panicScanner struct{ inner gateway.Scanner }

func (s panicScanner) Scan(ctx context.Context, req *scanner.Request) (*scanner.Result, error) {
	if req.URL == nil && req.Body != nil {
		b, _ := io.ReadAll(req.Body)
		if strings.Contains(string(b), "boom") {
			panic("scanner bug")
		}
		req.Body = strings.NewReader(string(b))
	}
	return s.inner.Scan(ctx, req)
}

// Hole 3: a panic while scanning a WebSocket message (on ReverseProxy's copy
// goroutine) closes that WebSocket with 1011 and records why; the process
// and the other WebSockets go on.
func TestPanicInWebSocketScanClosesOnlyThatWebSocket(t *testing.T) {
	w := newWSWorld(t, panicScanner{inner: &scanner.Scanner{MaxBodyBytes: wsMaxMessage}})
	tc, goodBR, _ := w.dial(t, "good", "")
	c1, br1, _ := w.dial(t, "victim", "")
	writeFrame(c1, true, 0x1, []byte("boom"), true)
	if code := closeCode(t, br1); code != 1011 {
		t.Fatalf("close code after a scanner panic: %d, want 1011", code)
	}
	if !w.sink.has(gateway.ReasonInternalError) {
		t.Fatalf("no incident for the panic: %q", w.sink.reasons())
	}
	writeFrame(tc, true, 0x1, []byte("hello"), true)
	tc.SetReadDeadline(time.Now().Add(3 * time.Second))
	f, err := readFrame(goodBR)
	if err != nil || string(f.payload) != "hello" {
		t.Fatalf("another WebSocket after the panic: %q %v", f.payload, err)
	}
}

// Hole 2: a frame header that claims a large payload holds nothing until the
// bytes come, and the message must keep arriving.
func TestWebSocketMessageMustKeepArriving(t *testing.T) {
	w := newWSWorld(t, &scanner.Scanner{MaxBodyBytes: wsMaxMessage})
	w.gw.Limits.BodyIdleTimeout = 500 * time.Millisecond
	c, br, _ := w.dial(t, "stall", "")
	// A masked text frame claiming 60 KiB, of which 10 bytes are sent.
	hdr := []byte{0x81, 0x80 | 126, 0xF0, 0x00, 1, 2, 3, 4}
	c.Write(append(hdr, make([]byte, 10)...))
	start := time.Now()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	code := closeCode(t, br)
	if d := time.Since(start); code != 1001 || d > 3*time.Second {
		t.Fatalf("stalled message: close %d after %v, want 1001 within the idle timeout", code, d)
	}
}

// An HTTP/1.1 tunnel is served after its CONNECT's handler has returned (the
// connection has a goroutine of its own, the CONNECT's is let go): idle, it
// stays tracked, every request on it is still checked, its close untracks
// it, and Shutdown closes it.
func TestIdleHTTP1TunnelTrackedUntilClosed(t *testing.T) {
	w := newWorld(t)
	authority := net.JoinHostPort("api.example.test", strconv.Itoa(w.up.port))
	open := func() (*tls.Conn, func(path string) int) {
		c, resp := w.connect("acme", w.tokens["acme"], authority)
		if c == nil {
			t.Fatalf("CONNECT: %s", resp.Status)
		}
		tc := tls.Client(c, &tls.Config{RootCAs: w.tenantRoots("acme"), ServerName: "api.example.test",
			NextProtos: []string{"http/1.1"}})
		br := bufio.NewReader(tc)
		return tc, func(path string) int {
			fmt.Fprintf(tc, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", path, authority)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("GET %s: %v", path, err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return resp.StatusCode
		}
	}
	tc, get := open()
	if code := get("/v1/things"); code != http.StatusOK {
		t.Fatalf("allowed GET: %d", code)
	}
	time.Sleep(50 * time.Millisecond) // idle
	if n := w.gw.OpenTunnels(); n != 1 {
		t.Fatalf("%d tunnels open, want the idle one", n)
	}
	if code := get("/admin"); code != http.StatusForbidden {
		t.Fatalf("GET outside the allowed paths on the idle tunnel: %d, want 403", code)
	}
	tc.Close()
	waitFor(t, func() bool { return w.gw.OpenTunnels() == 0 })

	// Closed from the gateway's side: every tunnel is closed at Shutdown.
	tc, get = open()
	defer tc.Close()
	if code := get("/v1/things"); code != http.StatusOK {
		t.Fatalf("allowed GET: %d", code)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := w.gw.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if n := w.gw.OpenTunnels(); n != 0 {
		t.Fatalf("%d tunnels open after shutdown", n)
	}
	tc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := tc.Read(make([]byte, 1)); err == nil {
		t.Fatal("the tunnel is still open after shutdown")
	}
}
