package gateway_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-egress/sluice/gateway"
	"github.com/sluice-egress/sluice/gateway/guard"
	"github.com/sluice-egress/sluice/scanner"
)

// tunnelAs opens an inspected tunnel to host on the trusted upstream as
// tenant and returns its TLS connection and reader.
func (w *world) tunnelAs(t *testing.T, tenant, host string) (*tls.Conn, *bufio.Reader) {
	t.Helper()
	authority := net.JoinHostPort(host, strconv.Itoa(w.up.port))
	c, resp := w.connect(tenant, w.tokens[tenant], authority)
	if c == nil {
		t.Fatalf("CONNECT %s as %s: %d %s", host, tenant, resp.StatusCode, resp.Header.Get("Sluice-Reason"))
	}
	tc := tls.Client(c, &tls.Config{ServerName: host, RootCAs: w.tenantRoots(tenant), NextProtos: []string{"http/1.1"}})
	if err := tc.Handshake(); err != nil {
		c.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { tc.Close() })
	return tc, bufio.NewReader(tc)
}

// answer reads one response within d; it fails the test when none comes.
func answer(t *testing.T, c net.Conn, br *bufio.Reader, d time.Duration) *http.Response {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(d))
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer within %v: %v", d, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	c.SetReadDeadline(time.Time{})
	return resp
}

func reasonOf(r *http.Response) string { return r.Header.Get("Sluice-Reason") }

// Hole 1: a request that declares more than the scan limit reserves nothing
// and is answered at once, without its body being waited for.
func TestDeclaredOversizeIsAnsweredAtOnce(t *testing.T) {
	w := newWorld(t)
	w.gw.Scanner = &scanner.Scanner{MaxBodyBytes: 64 << 10}
	w.gw.ScanMemory, w.gw.ScanBodyLimit = 1<<20, 64<<10
	tc, br := w.tunnelAs(t, "acme", "api.example.test")
	// The path carries a token the shapes alone do not know: the incident,
	// recorded before any scan, keeps it masked all the same.
	pat := "ghp_" + fakeLower(36)
	fmt.Fprintf(tc, "POST /v1/upload/%s HTTP/1.1\r\nHost: api.example.test:%d\r\nContent-Length: %d\r\n\r\nsome bytes", pat, w.up.port, 300<<20)
	resp := answer(t, tc, br, 2*time.Second)
	if resp.StatusCode != http.StatusRequestEntityTooLarge || reasonOf(resp) != scanner.ReasonOversize {
		t.Fatalf("declared 300 MiB: %d %q, want 413 %s", resp.StatusCode, reasonOf(resp), scanner.ReasonOversize)
	}
	if !w.sink.has(scanner.ReasonOversize) {
		t.Fatalf("no oversize incident: %q", w.sink.reasons())
	}
	w.sink.mu.Lock()
	events := fmt.Sprintf("%+v", w.sink.events)
	w.sink.mu.Unlock()
	if strings.Contains(events, pat) || !strings.Contains(events, "/v1/upload/") {
		t.Fatalf("the oversize incident keeps the path's token, or no path: %s", events)
	}
}

// Hole 1: one tenant's uploads that trickle cannot take the scan memory of
// every tenant; they end at the body timeouts.
func TestTricklingBodiesDoNotStarveOtherTenants(t *testing.T) {
	w := newWorld(t)
	w.gw.Scanner = &scanner.Scanner{MaxBodyBytes: 100 << 10}
	w.gw.ScanMemory, w.gw.ScanBodyLimit = 1<<20, 100<<10
	w.gw.ScanWait = 300 * time.Millisecond
	w.gw.Limits.BodyIdleTimeout = 1500 * time.Millisecond
	w.gw.Limits.BodyReadTimeout = 3 * time.Second
	type stalled struct {
		c  net.Conn
		br *bufio.Reader
	}
	var hogs []stalled
	for range 12 { // 12 × 90 KiB: more than the whole pool
		tc, br := w.tunnelAs(t, "acme", "api.example.test")
		fmt.Fprintf(tc, "POST /v1/upload HTTP/1.1\r\nHost: api.example.test:%d\r\nContent-Length: %d\r\n\r\n%s",
			w.up.port, 90<<10, strings.Repeat("x", 1024))
		hogs = append(hogs, stalled{tc, br})
	}
	time.Sleep(300 * time.Millisecond) // let them take their shares

	tc, br := w.tunnelAs(t, "globex", "other.example.test")
	body := strings.Repeat("y", 60<<10)
	fmt.Fprintf(tc, "POST /up HTTP/1.1\r\nHost: other.example.test:%d\r\nContent-Length: %d\r\n\r\n%s", w.up.port, len(body), body)
	if resp := answer(t, tc, br, 3*time.Second); resp.StatusCode != 200 {
		t.Fatalf("other tenant's upload while one tenant trickles: %d %q, want 200", resp.StatusCode, reasonOf(resp))
	}
	// The stalled uploads end with 408 at the idle timeout, not never.
	start := time.Now()
	for _, h := range hogs {
		h.c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(h.br, nil)
		if err != nil {
			t.Logf("hog: %v after %v", err, time.Since(start))
			continue // refused (scan-busy) and closed, or closed at the timeout
		}
		t.Logf("hog: %d %s after %v", resp.StatusCode, reasonOf(resp), time.Since(start))
		if resp.StatusCode != http.StatusRequestTimeout && resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("stalled upload: %d %q, want 408 or 503", resp.StatusCode, reasonOf(resp))
		}
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Fatalf("stalled uploads ended after %v", d)
	}
}

// A body that trickles steadily (never idle) still ends at BodyReadTimeout.
func TestTricklingBodyEndsAtBodyReadTimeout(t *testing.T) {
	w := newWorld(t)
	w.gw.Scanner = &scanner.Scanner{MaxBodyBytes: 100 << 10}
	w.gw.Limits.BodyIdleTimeout = time.Second
	w.gw.Limits.BodyReadTimeout = time.Second
	tc, br := w.tunnelAs(t, "acme", "api.example.test")
	fmt.Fprintf(tc, "POST /v1/upload HTTP/1.1\r\nHost: api.example.test:%d\r\nContent-Length: 10000\r\n\r\n", w.up.port)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
				if _, err := tc.Write([]byte("x")); err != nil {
					return
				}
			}
		}
	}()
	start := time.Now()
	resp := answer(t, tc, br, 4*time.Second)
	if resp.StatusCode != http.StatusRequestTimeout || reasonOf(resp) != gateway.ReasonClientTimeout {
		t.Fatalf("trickled body: %d %q, want 408 %s", resp.StatusCode, reasonOf(resp), gateway.ReasonClientTimeout)
	}
	if d := time.Since(start); d < 900*time.Millisecond {
		t.Fatalf("refused after %v, before the timeout", d)
	}
	if len(w.up.requests()) != 0 {
		t.Fatal("the upstream received a request whose body never arrived")
	}
}

// blockingDialer dials nothing: it waits until its context ends.
type blockingDialer struct{}

func (blockingDialer) Dial(ctx context.Context, _ guard.Target) (net.Conn, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// silentDialer connects every upstream to a listener that accepts and never answers.
type silentDialer struct{ addr string }

func (d silentDialer) Dial(ctx context.Context, _ guard.Target) (net.Conn, error) {
	var nd net.Dialer
	return nd.DialContext(ctx, "tcp", d.addr)
}

func silentUpstream(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go io.Copy(io.Discard, c)
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	return l.Addr().String()
}

// An upstream that never answers, or cannot be reached, ends at its timeout
// with 504 upstream-timeout.
func TestUpstreamTimeouts(t *testing.T) {
	for _, tc := range []struct {
		name   string
		dialer func(t *testing.T) gateway.Dialer
	}{
		{"never answers", func(t *testing.T) gateway.Dialer { return silentDialer{silentUpstream(t)} }},
		{"never connects", func(t *testing.T) gateway.Dialer { return blockingDialer{} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			w.gw.Dialer = tc.dialer(t)
			w.gw.Limits.UpstreamConnectTimeout = 500 * time.Millisecond
			w.gw.Limits.UpstreamHeaderTimeout = 500 * time.Millisecond
			c, err := net.Dial("tcp", w.proxyAddr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			auth := base64.StdEncoding.EncodeToString([]byte("acme:" + w.tokens["acme"]))
			fmt.Fprintf(c, "GET http://plain.example.test:%d/ HTTP/1.1\r\nHost: plain.example.test:%d\r\nProxy-Authorization: Basic %s\r\n\r\n",
				w.plainPort, w.plainPort, auth)
			start := time.Now()
			resp := answer(t, c, bufio.NewReader(c), 4*time.Second)
			if resp.StatusCode != http.StatusGatewayTimeout || reasonOf(resp) != gateway.ReasonUpstreamTimeout {
				t.Fatalf("%d %q, want 504 %s", resp.StatusCode, reasonOf(resp), gateway.ReasonUpstreamTimeout)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Fatalf("answered after %v", d)
			}
		})
	}
}

// Oversized request lines and headers are refused, and the gateway goes on
// serving.
func TestHeaderLimits(t *testing.T) {
	w := newWorld(t)
	auth := base64.StdEncoding.EncodeToString([]byte("acme:" + w.tokens["acme"]))
	send := func(t *testing.T, path, extra string) *http.Response {
		c, err := net.Dial("tcp", w.proxyAddr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		go fmt.Fprintf(c, "GET http://plain.example.test:%d%s HTTP/1.1\r\nHost: plain.example.test:%d\r\nProxy-Authorization: Basic %s\r\n%s\r\n",
			w.plainPort, path, w.plainPort, auth, extra)
		return answer(t, c, bufio.NewReader(c), 5*time.Second)
	}
	many := ""
	for i := range 200 {
		many += fmt.Sprintf("X-H%d: v\r\n", i)
	}
	// Every refusal says why, also the 431 that net/http writes itself for a
	// head over MaxHeaderBytes (the 2 MiB and 100 KiB cases).
	for _, tc := range []struct {
		name, path, extra string
		want              int
		reason            string
	}{
		{"2 MiB header", "/", "X-Big: " + strings.Repeat("a", 2<<20) + "\r\n", http.StatusRequestHeaderFieldsTooLarge, gateway.ReasonHeaderTooLarge},
		{"100 KiB header", "/", "X-Big: " + strings.Repeat("a", 100<<10) + "\r\n", http.StatusRequestHeaderFieldsTooLarge, gateway.ReasonHeaderTooLarge},
		{"200 headers", "/", many, http.StatusRequestHeaderFieldsTooLarge, gateway.ReasonHeaderTooLarge},
		{"20 KiB URL", "/" + strings.Repeat("p", 20<<10), "", http.StatusRequestURITooLong, gateway.ReasonURLTooLong},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if resp := send(t, tc.path, tc.extra); resp.StatusCode != tc.want || reasonOf(resp) != tc.reason {
				t.Fatalf("%d %q, want %d %q", resp.StatusCode, reasonOf(resp), tc.want, tc.reason)
			}
			if resp := send(t, "/after", ""); resp.StatusCode != 200 {
				t.Fatalf("next request: %d %q", resp.StatusCode, reasonOf(resp))
			}
		})
	}
	// Inside an inspected tunnel too.
	tc, br := w.tunnelAs(t, "acme", "api.example.test")
	go fmt.Fprintf(tc, "GET /v1/a HTTP/1.1\r\nHost: api.example.test:%d\r\nX-Big: %s\r\n\r\n", w.up.port, strings.Repeat("a", 100<<10))
	if resp := answer(t, tc, br, 5*time.Second); resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge || reasonOf(resp) != gateway.ReasonHeaderTooLarge {
		t.Fatalf("100 KiB header in a tunnel: %d %q", resp.StatusCode, reasonOf(resp))
	}
}

// Slowloris: hundreds of connections that send their headers a byte at a
// time from one address neither delay a client at another address nor
// outlive ReadHeaderTimeout; those over the per-client limit are refused.
func TestSlowloris(t *testing.T) {
	w := newWorldWith(t, func(g *gateway.Gateway) {
		g.Limits.ReadHeaderTimeout = time.Second
		g.Limits.MaxConnsPerClient = 50
	})
	proxy := w.proxyAddr
	attacker := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
	var slow []net.Conn
	for range 200 {
		c, err := attacker.Dial("tcp", proxy)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		slow = append(slow, c)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, c := range slow {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, b := range []byte("GET http://plain.example.test/ HTTP/1.1\r\nHost: plain.example.test\r\n") {
				select {
				case <-stop:
					return
				case <-time.After(100 * time.Millisecond):
				}
				if _, err := c.Write([]byte{b}); err != nil {
					return
				}
			}
		}()
	}
	client := w.client("acme", w.tokens["acme"], nil)
	client.Transport.(*http.Transport).Proxy = http.ProxyURL(mustURL(t, "http://acme:"+w.tokens["acme"]+"@"+proxy))
	for range 5 {
		start := time.Now()
		resp, err := client.Get("http://plain.example.test:" + strconv.Itoa(w.plainPort) + "/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || time.Since(start) > 2*time.Second {
			t.Fatalf("normal client during slowloris: %d after %v", resp.StatusCode, time.Since(start))
		}
	}
	// By now (ReadHeaderTimeout and more) every slow connection is closed.
	time.Sleep(1500 * time.Millisecond)
	open := 0
	for _, c := range slow {
		c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		if _, err := io.Copy(io.Discard, c); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				open++
			}
		}
	}
	close(stop)
	wg.Wait()
	if open > 0 {
		t.Fatalf("%d slow connections still open after ReadHeaderTimeout", open)
	}
}

// A tenant's connections are bounded; another tenant is not affected.
func TestConnectionsPerTenant(t *testing.T) {
	w := newWorld(t)
	w.gw.Limits.MaxConnsPerTenant = 2
	authority := net.JoinHostPort("other.example.test", strconv.Itoa(w.up.port))
	a1, _ := w.connect("acme", w.tokens["acme"], authority)
	a2, _ := w.connect("acme", w.tokens["acme"], authority)
	if a1 == nil || a2 == nil {
		t.Fatal("first two tunnels refused")
	}
	defer a2.Close()
	if c, resp := w.connect("acme", w.tokens["acme"], authority); c != nil || resp.StatusCode != http.StatusServiceUnavailable || reasonOf(resp) != gateway.ReasonTooManyConnections {
		if c != nil {
			c.Close()
		}
		t.Fatalf("third tunnel of the tenant: %v, want 503 %s", resp.Status, gateway.ReasonTooManyConnections)
	}
	g, _ := w.connect("globex", w.tokens["globex"], authority)
	if g == nil {
		t.Fatal("the other tenant was refused")
	}
	g.Close()
	a1.Close()
	waitFor(t, func() bool {
		c, _ := w.connect("acme", w.tokens["acme"], authority)
		if c != nil {
			c.Close()
		}
		return c != nil
	})
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
