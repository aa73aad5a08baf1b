package gateway_test

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-egress/sluice/ca"
	"github.com/sluice-egress/sluice/gateway"
	"github.com/sluice-egress/sluice/gateway/guard"
	"github.com/sluice-egress/sluice/internal/testnet"
)

// The tests in this file hold the gateway's own HTTP/1.1 path upstream for
// bodiless GET, HEAD and OPTIONS (upstream1.go) to what http.Transport and
// ReverseProxy did for them: connections reused and retried only where that
// is safe, hop-by-hop headers dropped both ways, a broken answer never passed
// on as a whole one, and nothing held once the client has gone.

// scriptedUpstream is a TLS upstream whose answers a test writes by hand.
// answer writes the answer to req and reports whether to read on from the
// same connection.
type scriptedUpstream struct {
	port   int
	answer func(c net.Conn, req *http.Request, n int) bool
	mu     sync.Mutex
	conns  int
	seen   []*http.Request
	closed chan time.Time // when the gateway closed a connection
}

func startScripted(t *testing.T, cfg *tls.Config, answer func(c net.Conn, req *http.Request, n int) bool) *scriptedUpstream {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg = cfg.Clone()
	cfg.NextProtos = []string{"http/1.1"}
	l = tls.NewListener(l, cfg)
	t.Cleanup(func() { l.Close() })
	u := &scriptedUpstream{port: l.Addr().(*net.TCPAddr).Port, answer: answer, closed: make(chan time.Time, 16)}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			u.mu.Lock()
			u.conns++
			u.mu.Unlock()
			go u.serve(c)
		}
	}()
	return u
}

func (u *scriptedUpstream) serve(c net.Conn) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	br := bufio.NewReader(c)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				u.closed <- time.Now()
			}
			return
		}
		u.mu.Lock()
		u.seen = append(u.seen, req)
		n := len(u.seen)
		u.mu.Unlock()
		if !u.answer(c, req, n) {
			return
		}
	}
}

func (u *scriptedUpstream) counts() (conns, requests int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.conns, len(u.seen)
}

// h1World is a gateway that allows other.example.test on the scripted
// upstream's port, with a client that trusts the tenant CA.
type h1World struct {
	up     *scriptedUpstream
	client *http.Client
	proxy  string
	token  string
	cas    *ca.Store
}

func newH1World(t *testing.T, answer func(c net.Conn, req *http.Request, n int) bool) *h1World {
	t.Helper()
	dir := t.TempDir()
	upCA := testnet.NewTestCA(t, "upstream")
	w := &h1World{up: startScripted(t, upCA.ServerTLS(t, "other.example.test"), answer), token: randomToken(t)}
	engine := acmePolicy(t, dir, w.token, fmt.Sprintf(bypassPolicy, w.up.port, w.up.port))
	w.cas = &ca.Store{Dir: filepath.Join(dir, "ca")}
	gw := &gateway.Gateway{
		Policy:  engine,
		Leaf:    func(tenant, host string) (*tls.Certificate, error) { return mustAuthority(t, w.cas, tenant).Leaf(host) },
		Dialer:  &guard.Dialer{Hosts: engine.UpstreamHosts(), Deny: withoutLoopback(guard.DefaultDeny()), Self: func() []netip.Addr { return nil }},
		RootCAs: upCA.Pool(),
		Events:  &recordingSink{},
	}
	w.proxy = serveOnLoopback(t, gw)
	pool := x509.NewCertPool()
	pool.AddCert(mustAuthority(t, w.cas, "acme").Certificate())
	w.client = &http.Client{
		Transport: &http.Transport{
			Proxy:           http.ProxyURL(&url.URL{Scheme: "http", User: url.UserPassword("acme", w.token), Host: w.proxy}),
			TLSClientConfig: &tls.Config{RootCAs: pool},
		},
		Timeout: 10 * time.Second,
	}
	t.Cleanup(w.client.CloseIdleConnections)
	return w
}

func (w *h1World) url(path string) string {
	return "https://other.example.test:" + strconv.Itoa(w.up.port) + path
}

// do sends method to path and reads the body; err is the request's or the body's.
func (w *h1World) do(method, path string, header http.Header) (*http.Response, string, error) {
	req, err := http.NewRequest(method, w.url(path), nil)
	if err != nil {
		return nil, "", err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := w.client.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, string(b), err
}

func answerOK(c net.Conn, body string, extra ...string) {
	fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n%s\r\n%s", len(body), strings.Join(append(extra, ""), "\r\n"), body)
}

// Sequential requests share one upstream connection, and a HEAD answer's
// Content-Length does not make the gateway wait for a body.
func TestBodilessRequestsReuseUpstreamConnection(t *testing.T) {
	w := newH1World(t, func(c net.Conn, req *http.Request, n int) bool {
		if req.Method == http.MethodHead {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n")
			return true
		}
		answerOK(c, "ok"+strconv.Itoa(n))
		return true
	})
	for i, m := range []string{"GET", "HEAD", "OPTIONS", "GET"} {
		resp, body, err := w.do(m, "/r", nil)
		if err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %s", m, resp.Status)
		}
		if m == "HEAD" {
			if resp.ContentLength != 100 || body != "" {
				t.Fatalf("HEAD: Content-Length %d, body %q", resp.ContentLength, body)
			}
		} else if want := "ok" + strconv.Itoa(i+1); body != want {
			t.Fatalf("%s: body %q, want %q", m, body, want)
		}
	}
	if conns, reqs := w.up.counts(); conns != 1 || reqs != 4 {
		t.Fatalf("upstream saw %d requests on %d connections, want 4 on 1", reqs, conns)
	}
}

// An upstream that closes a kept-alive connection while it idles costs the
// client nothing: the GET goes out again on a new connection. An answer that
// ends the connection is not followed by a request on it.
func TestBodilessRequestRetriedAfterIdleClose(t *testing.T) {
	w := newH1World(t, func(c net.Conn, req *http.Request, n int) bool {
		switch req.URL.Path {
		case "/close-after":
			answerOK(c, "a")
			time.Sleep(50 * time.Millisecond)
			return false // closes while the gateway keeps it idle
		case "/connection-close":
			answerOK(c, "c", "Connection: close")
			return true // keeps reading: a request on it would be seen
		}
		answerOK(c, "b")
		return true
	})
	if _, _, err := w.do("GET", "/close-after", nil); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	resp, body, err := w.do("GET", "/next", nil)
	if err != nil || resp.StatusCode != 200 || body != "b" {
		t.Fatalf("GET after the upstream closed its idle connection: %v %v %q", resp, err, body)
	}
	if _, _, err := w.do("GET", "/connection-close", nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := w.do("GET", "/next", nil); err != nil {
		t.Fatal(err)
	}
	if conns, reqs := w.up.counts(); conns != 3 || reqs != 4 {
		t.Fatalf("upstream saw %d requests on %d connections, want 4 on 3", reqs, conns)
	}
}

// A request the upstream read and then answered only in part is not sent
// again: the upstream may have acted on it.
func TestBodilessRequestNotRetriedAfterPartialAnswer(t *testing.T) {
	w := newH1World(t, func(c net.Conn, req *http.Request, n int) bool {
		if req.URL.Path == "/partial" {
			io.WriteString(c, "HTTP/1.1 200 O")
			return false
		}
		answerOK(c, "x")
		return true
	})
	if _, _, err := w.do("GET", "/first", nil); err != nil {
		t.Fatal(err)
	}
	resp, _, err := w.do("GET", "/partial", nil)
	if err != nil || resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("partial answer: %v %v, want 502", resp, err)
	}
	if _, reqs := w.up.counts(); reqs != 2 {
		t.Fatalf("upstream saw %d requests, want 2 (the partly answered one once)", reqs)
	}
}

// Hop-by-hop headers, those a Connection header names and the gateway's own
// do not cross the gateway, either way; Te: trailers does.
func TestBodilessHopByHopHeadersDropped(t *testing.T) {
	w := newH1World(t, func(c net.Conn, req *http.Request, n int) bool {
		answerOK(c, "ok", "Connection: X-Up-Hop", "X-Up-Hop: 1", "Keep-Alive: timeout=5", "Sluice-Reason: forged", "X-Up-Kept: 1")
		return true
	})
	resp, _, err := w.do("GET", "/h", http.Header{
		"Connection": {"X-Hop"}, "X-Hop": {"v"}, "Keep-Alive": {"300"}, "Te": {"trailers, deflate"},
		"Forwarded": {"for=198.51.100.1"}, "X-Forwarded-For": {"198.51.100.1"}, "Upgrade-Insecure-Requests": {"1"},
		"X-Kept": {"1"},
	})
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("%v %v", resp, err)
	}
	for _, h := range []string{"X-Up-Hop", "Keep-Alive", "Sluice-Reason"} {
		if v := resp.Header.Get(h); v != "" {
			t.Errorf("client got upstream's %s: %q", h, v)
		}
	}
	if resp.Header.Get("X-Up-Kept") != "1" {
		t.Error("client lost the upstream's X-Up-Kept")
	}
	w.up.mu.Lock()
	got := w.up.seen[0].Header
	w.up.mu.Unlock()
	for _, h := range []string{"X-Hop", "Keep-Alive", "Forwarded", "X-Forwarded-For", "Proxy-Authorization", "Proxy-Connection"} {
		if v := got.Get(h); v != "" {
			t.Errorf("upstream got %s: %q", h, v)
		}
	}
	if got.Get("Te") != "trailers" || got.Get("X-Kept") != "1" || got.Get("Upgrade-Insecure-Requests") != "1" {
		t.Errorf("upstream header %v: want Te: trailers, X-Kept and Upgrade-Insecure-Requests", got)
	}
}

// An answer that breaks off inside a chunked body reaches the client as a
// broken body, never as a whole shorter one; trailers of a whole one pass.
func TestBodilessBrokenAnswerIsCut(t *testing.T) {
	w := newH1World(t, func(c net.Conn, req *http.Request, n int) bool {
		if req.URL.Path == "/trailers" {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Sum\r\n\r\n5\r\nhello\r\n0\r\nX-Sum: 42\r\nSluice-Incident: forged\r\n\r\n")
			return true
		}
		io.WriteString(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n")
		return false
	})
	resp, body, err := w.do("GET", "/trailers", nil)
	if err != nil || body != "hello" || resp.Trailer.Get("X-Sum") != "42" || resp.Trailer.Get("Sluice-Incident") != "" {
		t.Fatalf("chunked answer with trailers: %v %q %v", err, body, resp.Trailer)
	}
	_, body, err = w.do("GET", "/cut", nil)
	if err == nil {
		t.Fatalf("a body cut off by the upstream reached the client whole: %q", body)
	}
}

// An upstream's response header is bounded.
func TestBodilessHugeAnswerHeaderRefused(t *testing.T) {
	w := newH1World(t, func(c net.Conn, req *http.Request, n int) bool {
		io.WriteString(c, "HTTP/1.1 200 OK\r\n")
		line := "X-Big: " + strings.Repeat("a", 1000) + "\r\n"
		for range 2 << 10 { // 2 MiB
			if _, err := io.WriteString(c, line); err != nil {
				return false
			}
		}
		io.WriteString(c, "Content-Length: 0\r\n\r\n")
		return false
	})
	resp, _, err := w.do("GET", "/big", nil)
	if err != nil || resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("2 MiB response header: %v %v, want 502", resp, err)
	}
}

// A client that gives up frees the upstream connection its request holds,
// long before the upstream header timeout.
func TestBodilessClientLeavingClosesUpstream(t *testing.T) {
	w := newH1World(t, func(c net.Conn, req *http.Request, n int) bool {
		return true // never answers; the next read sees the gateway close
	})
	w.client.Timeout = 300 * time.Millisecond
	left := time.Now()
	if resp, body, err := w.do("GET", "/hang", nil); err == nil {
		t.Fatalf("a GET the upstream never answered succeeded: %s, Sluice-Reason %q, body %q", resp.Status, resp.Header.Get("Sluice-Reason"), body)
	}
	select {
	case at := <-w.up.closed:
		if d := at.Sub(left); d > 5*time.Second {
			t.Fatalf("upstream connection closed %v after the client left", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the gateway kept the upstream connection of a client that left")
	}
}

// A client that stops sending (TLS close_notify) while its request waits for
// the upstream has left: the gateway answers nothing rather than a 200 it never
// got (net/http writes one for a handler that returns without answering). A
// client that half-closes and keeps reading would take it for the upstream's.
// Both paths: the own one (GET) and ReverseProxy's (DELETE).
func TestClientLeavingGetsNoMadeUpAnswer(t *testing.T) {
	for _, method := range []string{"GET", "DELETE"} {
		t.Run(method, func(t *testing.T) {
			w := newH1World(t, func(c net.Conn, req *http.Request, n int) bool {
				return true // never answers
			})
			tc, br := w.rawTunnel(t)
			fmt.Fprintf(tc, "%s /hang HTTP/1.1\r\nHost: other.example.test:%d\r\n\r\n", method, w.up.port)
			waitFor(t, func() bool { _, n := w.up.counts(); return n == 1 })
			if err := tc.CloseWrite(); err != nil {
				t.Fatal(err)
			}
			tc.SetReadDeadline(time.Now().Add(5 * time.Second))
			if resp, err := http.ReadResponse(br, nil); err == nil {
				t.Fatalf("the client that left got %s, Sluice-Reason %q: an answer the upstream never gave", resp.Status, resp.Header.Get("Sluice-Reason"))
			}
		})
	}
}

// rawTunnel opens an inspected tunnel to other.example.test: requests
// written to it reach the gateway's HTTP/1.1 server byte for byte.
func (w *h1World) rawTunnel(t *testing.T) (*tls.Conn, *bufio.Reader) {
	t.Helper()
	return acmeTunnel(t, w.proxy, w.token, w.cas, "other.example.test", w.up.port)
}

// The gateway's own path sends the upstream the header ReverseProxy and
// http.Transport sent for the same request, and the client the same answer
// header: each header set goes once as a GET (the own path) and once as a
// DELETE (ReverseProxy, which the own path does not take), and the upstream
// must see the same fields and values, the client get the same ones back.
func TestBodilessPathSendsWhatReverseProxySent(t *testing.T) {
	w := newH1World(t, func(c net.Conn, req *http.Request, n int) bool {
		answerOK(c, "ok", "Connection: X-Up-Hop", "X-Up-Hop: 1", "Keep-Alive: timeout=5", "Proxy-Connection: keep-alive",
			"Sluice-Reason: forged", "X-Up: a", "X-Up: b", "Set-Cookie: s=1", "Set-Cookie: t=2", "Trailer: X-Late")
		return true
	})
	headerSets := []string{
		"Accept-Encoding: br\r\nX-One: 1\r\n",
		"Accept-Encoding: gzip\r\nConnection: keep-alive, X-Drop\r\nX-Drop: 1\r\nKeep-Alive: 300\r\nX-Kept: 2\r\n",
		"Accept-Encoding: gzip\r\nTe: trailers, deflate\r\nProxy-Connection: keep-alive\r\nForwarded: for=198.51.100.9\r\nX-Forwarded-For: 198.51.100.9\r\nX-Forwarded-Host: a.example.test\r\nX-Forwarded-Proto: http\r\n",
		"Accept-Encoding: identity\r\nX-Multi: a\r\nX-Multi: b\r\nx-lower-case: v\r\nX-Empty:\r\nUser-Agent: agent/1.0\r\nContent-Length: 0\r\n",
		"Accept-Encoding: gzip\r\nTe: gzip\r\nUpgrade-Insecure-Requests: 1\r\nCookie: a=1\r\nCookie: b=2\r\nAuthorization: Bearer not-a-secret\r\n",
	}
	tc, br := w.rawTunnel(t)
	host := "other.example.test:" + strconv.Itoa(w.up.port)
	var answers []http.Header
	for _, hs := range headerSets {
		for _, m := range []string{"GET", "DELETE"} {
			fmt.Fprintf(tc, "%s /same?q=1 HTTP/1.1\r\nHost: %s\r\n%s\r\n", m, host, hs)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("%s with %q: %s (%s)", m, hs, resp.Status, resp.Header.Get("Sluice-Reason"))
			}
			delete(resp.Header, "Date")
			answers = append(answers, resp.Header)
		}
	}
	if !headersEqual(answers[0], answers[1]) {
		t.Errorf("answer header:\nown path gave     %v\nReverseProxy gave %v", answers[0], answers[1])
	}
	if v := answers[0].Get("Sluice-Reason") + answers[0].Get("X-Up-Hop"); v != "" {
		t.Errorf("the client got the upstream's Sluice-Reason or X-Up-Hop: %q", v)
	}
	w.up.mu.Lock()
	seen := append([]*http.Request(nil), w.up.seen...)
	w.up.mu.Unlock()
	if len(seen) != 2*len(headerSets) {
		t.Fatalf("upstream saw %d requests, want %d", len(seen), 2*len(headerSets))
	}
	for i, hs := range headerSets {
		own, rp := seen[2*i], seen[2*i+1]
		if own.Method != "GET" || rp.Method != "DELETE" {
			t.Fatalf("order: %s, %s", own.Method, rp.Method)
		}
		if own.Host != rp.Host || own.RequestURI != rp.RequestURI {
			t.Errorf("%q: own path sent %s %s, ReverseProxy %s %s", hs, own.Host, own.RequestURI, rp.Host, rp.RequestURI)
		}
		if !headersEqual(own.Header, rp.Header) {
			t.Errorf("%q:\nown path sent     %v\nReverseProxy sent %v", hs, own.Header, rp.Header)
		}
	}
}

func headersEqual(a, b http.Header) bool {
	if len(a) != len(b) {
		return false
	}
	for k, va := range a {
		if !slices.Equal(va, b[k]) {
			return false
		}
	}
	return true
}
