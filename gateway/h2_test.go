package gateway_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/sluice-egress/sluice/gateway"
	"github.com/sluice-egress/sluice/scanner"
)

// h2Tunnel opens an inspected tunnel to authority as acme and speaks HTTP/2
// inside it, on one connection.
func (w *world) h2Tunnel(t *testing.T, authority, sni string) *http2.ClientConn {
	t.Helper()
	tc := w.h2TLS(t, authority, sni)
	cc, err := (&http2.Transport{}).NewClientConn(tc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

// h2TLS is the TLS connection inside a tunnel, with h2 negotiated.
func (w *world) h2TLS(t *testing.T, authority, sni string) *tls.Conn {
	t.Helper()
	c, resp := w.connect("acme", w.tokens["acme"], authority)
	if c == nil {
		t.Fatalf("CONNECT refused: %d %s", resp.StatusCode, resp.Header.Get("Sluice-Reason"))
	}
	tc := tls.Client(c, &tls.Config{ServerName: sni, RootCAs: w.tenantRoots("acme"), NextProtos: []string{"h2", "http/1.1"}})
	if err := tc.Handshake(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tc.Close() })
	if p := tc.ConnectionState().NegotiatedProtocol; p != "h2" {
		t.Fatalf("negotiated %q, want h2", p)
	}
	return tc
}

func h2Get(t *testing.T, cc *http2.ClientConn, authority, path string) (int, string, string, error) {
	t.Helper()
	req, _ := http.NewRequest("GET", "https://"+authority+path, nil)
	resp, err := cc.RoundTrip(req)
	if err != nil {
		return 0, "", "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Sluice-Reason"), string(body), nil
}

// Every stream is checked on its own: a refused stream (path, fronting,
// CONNECT) gets its 403 while a concurrent allowed stream on the same
// connection finishes, and the connection goes on serving.
func TestH2StreamsAreCheckedOneByOne(t *testing.T) {
	w := newWorld(t)
	authority := net.JoinHostPort("api.example.test", strconv.Itoa(w.up.port))
	cc := w.h2Tunnel(t, authority, "api.example.test")

	slow := make(chan string, 1)
	go func() {
		code, _, body, err := h2Get(t, cc, authority, "/slow")
		slow <- fmt.Sprint(code, " ", body, " ", err)
	}()
	time.Sleep(100 * time.Millisecond) // /slow is under way upstream

	refusals := []struct {
		name, authority, path, want string
	}{
		{"path", authority, "/admin", "path-not-allowed"},
		{"other authority", net.JoinHostPort("other.example.test", strconv.Itoa(w.up.port)), "/v1/x", "domain-fronting"},
		{"other port", "api.example.test:1", "/v1/x", "domain-fronting"},
	}
	for _, tc := range refusals {
		code, reason, _, err := h2Get(t, cc, tc.authority, tc.path)
		if err != nil || code != 403 || reason != tc.want {
			t.Errorf("%s: %d %q %v, want 403 %s", tc.name, code, reason, err, tc.want)
		}
	}
	select {
	case got := <-slow:
		t.Fatalf("the allowed stream ended before the refusals were answered: %s", got)
	default:
	}
	if got := <-slow; got != "200 slow done <nil>" {
		t.Fatalf("allowed concurrent stream: %s", got)
	}
	if code, _, body, err := h2Get(t, cc, authority, "/v1/after"); err != nil || code != 200 || body != "hello GET /v1/after 0" {
		t.Fatalf("stream after the refusals: %d %q %v", code, body, err)
	}
	var paths []string
	for _, r := range w.up.requests() {
		paths = append(paths, r.URL.Path)
		if r.ProtoMajor != 1 {
			t.Errorf("upstream got %s over %s, want HTTP/1.1 (a bodiless GET takes the gateway's HTTP/1.1 path)", r.URL.Path, r.Proto)
		}
	}
	if strings.Join(paths, ",") != "/slow,/v1/after" {
		t.Errorf("upstream saw %v, want only the allowed streams", paths)
	}
}

// Request trailers arrive after the scan: they are dropped, not forwarded.
func TestH2RequestTrailersAreDropped(t *testing.T) {
	w := newWorld(t)
	authority := net.JoinHostPort("api.example.test", strconv.Itoa(w.up.port))
	cc := w.h2Tunnel(t, authority, "api.example.test")
	req, _ := http.NewRequest("POST", "https://"+authority+"/v1/x", &trailerBody{r: strings.NewReader("hi")})
	req.Trailer = http.Header{"X-Leak": nil}
	req.Body.(*trailerBody).req = req
	resp, err := cc.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	reqs := w.up.requests()
	if len(reqs) != 1 {
		t.Fatalf("upstream saw %d requests", len(reqs))
	}
	if len(reqs[0].Trailer) != 0 || reqs[0].Header.Get("Trailer") != "" {
		t.Fatalf("upstream was announced trailers %v %q", reqs[0].Trailer, reqs[0].Header.Get("Trailer"))
	}
}

// trailerBody sets its request's trailer once the body is read.
type trailerBody struct {
	r   io.Reader
	req *http.Request
}

func (b *trailerBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err == io.EOF {
		b.req.Trailer.Set("X-Leak", "trailer-value")
	}
	return n, err
}
func (b *trailerBody) Close() error { return nil }

// A tunnel that serves HTTP/2 is tracked like any other: a policy change
// that no longer allows its host closes it.
func TestH2PolicyChangeClosesTunnel(t *testing.T) {
	w := newWorld(t)
	p := &swapPolicy{}
	p.cur.Store(&denyHost{inner: w.gw.Policy})
	w.gw.Policy = p
	authority := net.JoinHostPort("api.example.test", strconv.Itoa(w.up.port))
	cc := w.h2Tunnel(t, authority, "api.example.test")
	if code, _, _, err := h2Get(t, cc, authority, "/v1/a"); err != nil || code != 200 {
		t.Fatalf("first stream: %d %v", code, err)
	}
	p.cur.Store(&denyHost{inner: p.cur.Load().inner, host: "api.example.test"})
	if n := w.gw.PolicyChanged(); n != 1 {
		t.Fatalf("PolicyChanged closed %d tunnels, want 1", n)
	}
	if code, _, _, err := h2Get(t, cc, authority, "/v1/b"); err == nil {
		t.Fatalf("stream after the policy change: %d, want the connection gone", code)
	}
	if n := len(w.up.requests()); n != 1 {
		t.Fatalf("upstream saw %d requests, want 1", n)
	}
}

// Shutdown sends GOAWAY to HTTP/2 clients: the stream under way finishes,
// then the connection closes.
func TestH2ShutdownDrains(t *testing.T) {
	w := newWorld(t)
	authority := net.JoinHostPort("api.example.test", strconv.Itoa(w.up.port))
	cc := w.h2Tunnel(t, authority, "api.example.test")
	slow := make(chan string, 1)
	go func() {
		code, _, body, err := h2Get(t, cc, authority, "/slow")
		slow <- fmt.Sprint(code, " ", body, " ", err)
	}()
	time.Sleep(100 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	if err := w.gw.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if got := <-slow; got != "200 slow done <nil>" {
		t.Fatalf("stream under way at shutdown: %s", got)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("Shutdown took %v: the idle HTTP/2 tunnel was not closed", d)
	}
	if w.gw.OpenTunnels() != 0 {
		t.Fatalf("%d tunnels open after Shutdown", w.gw.OpenTunnels())
	}
}

// Upstream connections are pooled per tenant and kept warm, and no request
// goes on a connection dialled for another tenant. A request with a body goes
// on in the client's protocol (the upstream offers both); a bodiless GET
// takes the gateway's HTTP/1.1 path whatever the client spoke.
func TestUpstreamPoolsPerTenantAndProtocol(t *testing.T) {
	w := newWorld(t)
	h1 := func(tenant string) *http.Client {
		c := w.client(tenant, w.tokens[tenant], w.tenantRoots(tenant))
		c.Transport.(*http.Transport).ForceAttemptHTTP2 = false
		return c
	}
	h2 := func(tenant string) *http.Client { return w.client(tenant, w.tokens[tenant], w.tenantRoots(tenant)) }
	clients := map[string]*http.Client{"acme-h1": h1("acme"), "globex-h1": h1("globex"), "acme-h2": h2("acme"), "globex-h2": h2("globex")}
	for i := range 3 {
		for name, c := range clients {
			for _, method := range []string{"GET", "POST"} {
				var body io.Reader
				if method == "POST" {
					body = strings.NewReader("hello")
				}
				req, _ := http.NewRequest(method, w.url("other.example.test", "/"+name+"/"+method+"/"+strconv.Itoa(i)), body)
				resp, err := c.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					t.Fatalf("%s %s: %d", name, method, resp.StatusCode)
				}
			}
		}
	}
	conns := map[string]map[string]bool{}   // client and method: upstream connections
	tenants := map[string]map[string]bool{} // upstream connection: tenants
	for _, r := range w.up.requests() {
		parts := strings.Split(r.URL.Path, "/")
		name, method := parts[1], parts[2]
		want := 1
		if strings.HasSuffix(name, "-h2") && method == "POST" {
			want = 2
		}
		if r.ProtoMajor != want {
			t.Errorf("%s reached the upstream over %s, want HTTP/%d", r.URL.Path, r.Proto, want)
		}
		key := name + " " + method
		if conns[key] == nil {
			conns[key] = map[string]bool{}
		}
		conns[key][r.RemoteAddr] = true
		if tenants[r.RemoteAddr] == nil {
			tenants[r.RemoteAddr] = map[string]bool{}
		}
		tenants[r.RemoteAddr][strings.Split(name, "-")[0]] = true
	}
	if len(conns) != 2*len(clients) {
		t.Fatalf("upstream saw %d kinds of request, want %d: %v", len(conns), 2*len(clients), conns)
	}
	for key, cs := range conns {
		if len(cs) != 1 {
			t.Errorf("%s: upstream connections %v, want one, kept alive", key, cs)
		}
	}
	for c, ts := range tenants {
		if len(ts) != 1 {
			t.Fatalf("connection %s carried several tenants' requests: %v", c, ts)
		}
	}
}

// h2c, by prior knowledge on the proxy port, is no way in: the proxy speaks
// HTTP/1.1 there.
func TestH2CPriorKnowledgeOnProxyPortRefused(t *testing.T) {
	w := newWorld(t)
	c, err := net.Dial("tcp", w.proxyAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, http2.ClientPreface)
	fr := http2.NewFramer(c, c)
	fr.WriteSettings()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	b := make([]byte, 9)
	n, _ := io.ReadFull(c, b)
	if n > 0 && !strings.HasPrefix(string(b[:n]), "HTTP/1.") {
		t.Fatalf("proxy port answered a prior-knowledge h2 preface with %q", b[:n])
	}
}

// rawH2 is a client that writes HTTP/2 frames itself, for the attacks.
type rawH2 struct {
	t        *testing.T
	tc       *tls.Conn
	fr       *http2.Framer
	enc      *hpack.Encoder
	buf      bytes.Buffer
	settings map[http2.SettingID]uint32
}

func (w *world) rawH2(t *testing.T, host string) *rawH2 {
	t.Helper()
	authority := net.JoinHostPort(host, strconv.Itoa(w.up.port))
	h := &rawH2{t: t, tc: w.h2TLS(t, authority, host), settings: map[http2.SettingID]uint32{}}
	h.enc = hpack.NewEncoder(&h.buf)
	io.WriteString(h.tc, http2.ClientPreface)
	h.fr = http2.NewFramer(h.tc, h.tc)
	h.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	h.fr.MaxHeaderListSize = 1 << 20
	if err := h.fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	h.tc.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		f, err := h.fr.ReadFrame()
		if err != nil {
			t.Fatalf("reading the server's SETTINGS: %v", err)
		}
		if sf, ok := f.(*http2.SettingsFrame); ok && !sf.IsAck() {
			sf.ForeachSetting(func(s http2.Setting) error { h.settings[s.ID] = s.Val; return nil })
			break
		}
	}
	h.fr.WriteSettingsAck()
	h.tc.SetReadDeadline(time.Time{})
	return h
}

// block encodes a header list.
func (h *rawH2) block(fields ...string) []byte {
	h.buf.Reset()
	for i := 0; i+1 < len(fields); i += 2 {
		h.enc.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]})
	}
	return bytes.Clone(h.buf.Bytes())
}

func (h *rawH2) request(id uint32, endStream bool, method, authority, path string, extra ...string) error {
	fields := append([]string{":method", method, ":scheme", "https", ":authority", authority, ":path", path}, extra...)
	return h.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: h.block(fields...),
		EndStream: endStream, EndHeaders: true})
}

// outcome reads frames until stream id is answered (its status) or reset,
// or the connection ends (GOAWAY or EOF).
type outcome struct {
	status  string
	rst     http2.ErrCode
	goaway  bool
	closed  bool
	timeout bool
}

func (h *rawH2) await(id uint32, d time.Duration) outcome {
	h.tc.SetReadDeadline(time.Now().Add(d))
	defer h.tc.SetReadDeadline(time.Time{})
	for {
		f, err := h.fr.ReadFrame()
		var ne net.Error
		switch {
		case errors.As(err, &ne) && ne.Timeout():
			return outcome{timeout: true}
		case err != nil:
			return outcome{closed: true}
		}
		switch f := f.(type) {
		case *http2.GoAwayFrame:
			return outcome{goaway: true}
		case *http2.RSTStreamFrame:
			if f.StreamID == id {
				return outcome{rst: f.ErrCode}
			}
		case *http2.MetaHeadersFrame:
			if f.StreamID == id {
				return outcome{status: f.PseudoValue("status")}
			}
		}
	}
}

func h2Limited(t *testing.T) *world {
	w := newWorld(t)
	w.gw.HTTP2 = gateway.HTTP2{MaxConcurrentStreams: 4, MaxHeaderBytes: 8 << 10, BodyTimeout: 500 * time.Millisecond,
		MaxResets: 20, ResetWindow: time.Minute}
	w.gw.Limits.BodyReadTimeout = 500 * time.Millisecond
	return w
}

func TestH2ConcurrentStreamsLimited(t *testing.T) {
	w := h2Limited(t)
	h := w.rawH2(t, "api.example.test")
	if got := h.settings[http2.SettingMaxConcurrentStreams]; got != 4 {
		t.Fatalf("SETTINGS_MAX_CONCURRENT_STREAMS %d, want 4", got)
	}
	authority := net.JoinHostPort("api.example.test", strconv.Itoa(w.up.port))
	for id := uint32(1); id <= 9; id += 2 {
		h.request(id, true, "GET", authority, "/slow")
	}
	if o := h.await(9, 5*time.Second); o.rst == 0 {
		t.Fatalf("fifth concurrent stream: %+v, want RST_STREAM", o)
	}
	time.Sleep(time.Second) // the four allowed streams are answered upstream
	if n := len(w.up.requests()); n != 4 {
		t.Fatalf("upstream saw %d requests, want 4", n)
	}
}

func TestH2HugeHeaderListRefused(t *testing.T) {
	w := h2Limited(t)
	h := w.rawH2(t, "api.example.test")
	authority := net.JoinHostPort("api.example.test", strconv.Itoa(w.up.port))
	// 12 KiB of headers: over the 8 KiB limit, well under net/http's 1 MiB default.
	h.request(1, true, "GET", authority, "/v1/x", "x-big", strings.Repeat("a", 12<<10))
	if o := h.await(1, 5*time.Second); o.status != "431" && !o.goaway && !o.closed {
		t.Fatalf("huge header list: %+v, want 431 (or the connection closed)", o)
	}
	if n := len(w.up.requests()); n != 0 {
		t.Fatalf("upstream saw %d requests", n)
	}
}

func TestH2ContinuationFloodClosesConnection(t *testing.T) {
	w := h2Limited(t)
	h := w.rawH2(t, "api.example.test")
	authority := net.JoinHostPort("api.example.test", strconv.Itoa(w.up.port))
	fields := []string{":method", "GET", ":scheme", "https", ":authority", authority, ":path", "/v1/x"}
	for i := range 256 {
		fields = append(fields, "x-f-"+strconv.Itoa(i), strings.Repeat("b", 1000))
	}
	blk := h.block(fields...) // 256 KiB: under net/http's 1 MiB default
	const chunk = 16 << 10
	go func() {
		h.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: blk[:chunk], EndStream: true})
		for off := chunk; off < len(blk); off += chunk {
			end := min(off+chunk, len(blk))
			if h.fr.WriteContinuation(1, end == len(blk), blk[off:end]) != nil {
				return
			}
		}
	}()
	o := h.await(1, 5*time.Second)
	if !o.goaway && !o.closed {
		t.Fatalf("CONTINUATION flood: %+v, want the connection closed", o)
	}
	if n := len(w.up.requests()); n != 0 {
		t.Fatalf("upstream saw %d requests", n)
	}
}

// Rapid reset (CVE-2023-44487): HEADERS then RST_STREAM, again and again;
// each costs the client two frames and the gateway (and the upstream) a
// request. In a burst, the server's queue of handlers not yet started
// overflows and it sends GOAWAY; paced so that the queue never fills, the
// gateway's reset budget closes the connection.
func TestH2RapidResetClosesConnection(t *testing.T) {
	for _, tc := range []struct {
		name  string
		pause time.Duration // after each pair
		event bool          // the budget's event is recorded
	}{
		{"burst", 0, false},
		{"paced", 2 * time.Millisecond, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := h2Limited(t)
			h := w.rawH2(t, "api.example.test")
			authority := net.JoinHostPort("api.example.test", strconv.Itoa(w.up.port))
			const pairs = 500
			done := make(chan int, 1)
			go func() {
				sent := 0
				for id := uint32(1); sent < pairs; id += 2 {
					if h.request(id, true, "GET", authority, "/slow") != nil || h.fr.WriteRSTStream(id, http2.ErrCodeCancel) != nil {
						break
					}
					sent++
					time.Sleep(tc.pause)
				}
				done <- sent
			}()
			var o outcome
			for !o.goaway && !o.closed && !o.timeout {
				o = h.await(0, 10*time.Second)
			}
			sent := <-done
			if o.timeout {
				t.Fatalf("connection still open after %d HEADERS+RST_STREAM pairs", sent)
			}
			if tc.event {
				waitFor(t, func() bool { return w.sink.has(gateway.ReasonHTTP2RapidReset) })
			}
			if n := len(w.up.requests()); n > 40 {
				t.Fatalf("upstream saw %d requests from reset streams", n)
			}
		})
	}
}

// A stream reset while its request waits upstream counts against the reset
// budget as one reset before its handler ran does: such a handler ends by
// aborting (the client left: no answer is made up), and the count must not
// depend on it returning.
func TestH2ResetsOfForwardedStreamsAreCounted(t *testing.T) {
	w := h2Limited(t)
	w.gw.HTTP2.MaxResets = 4
	h := w.rawH2(t, "api.example.test")
	authority := net.JoinHostPort("api.example.test", strconv.Itoa(w.up.port))
	var o outcome
	sent := 0
	for id := uint32(1); sent < 8 && !o.goaway && !o.closed; id += 2 {
		if h.request(id, true, "GET", authority, "/slow") != nil {
			break
		}
		sent++
		waitFor(t, func() bool { return len(w.up.requests()) == sent }) // forwarded
		if h.fr.WriteRSTStream(id, http2.ErrCodeCancel) != nil {
			break
		}
		o = h.await(0, 200*time.Millisecond)
	}
	for !o.goaway && !o.closed && !o.timeout {
		o = h.await(0, 5*time.Second)
	}
	if o.timeout {
		t.Fatalf("connection still open after %d streams reset upstream (budget 4)", sent)
	}
	waitFor(t, func() bool { return w.sink.has(gateway.ReasonHTTP2RapidReset) })
}

// A stream that trickles its body is cut off after BodyTimeout: it holds
// scan memory and a stream slot while the body is read for the scan.
func TestH2TrickledBodyTimesOut(t *testing.T) {
	w := h2Limited(t)
	w.gw.Scanner = &scanner.Scanner{Key: []byte("0123456789abcdef0123456789abcdef")}
	h := w.rawH2(t, "api.example.test")
	authority := net.JoinHostPort("api.example.test", strconv.Itoa(w.up.port))
	h.request(1, false, "POST", authority, "/v1/upload", "content-length", "100")
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for range 100 {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			if h.fr.WriteData(1, false, []byte("x")) != nil {
				return
			}
		}
	}()
	start := time.Now()
	o := h.await(1, 5*time.Second)
	if o.timeout || o.status == "200" {
		t.Fatalf("trickled body: %+v after %v, want the stream refused", o, time.Since(start))
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("trickled body refused after %v, want about BodyTimeout", d)
	}
	if n := len(w.up.requests()); n != 0 {
		t.Fatalf("upstream saw %d requests", n)
	}
}

// WebSocket over HTTP/2 (extended CONNECT, RFC 8441) is refused cleanly:
// not offered in SETTINGS, and a stream that tries is reset; a plain CONNECT
// stream is refused like a CONNECT inside an HTTP/1.1 tunnel.
func TestH2ExtendedConnectRefused(t *testing.T) {
	w := newWorld(t)
	h := w.rawH2(t, "ws.example.test")
	if v, ok := h.settings[http2.SettingEnableConnectProtocol]; ok && v != 0 {
		t.Fatalf("gateway offers extended CONNECT")
	}
	authority := net.JoinHostPort("ws.example.test", strconv.Itoa(w.up.port))
	h.request(1, false, "CONNECT", authority, "/ws", ":protocol", "websocket", "sec-websocket-version", "13")
	if o := h.await(1, 5*time.Second); o.rst == 0 && o.status != "403" {
		t.Fatalf("extended CONNECT: %+v, want RST_STREAM or 403", o)
	}
	h2 := w.rawH2(t, "ws.example.test")
	h2.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, EndHeaders: true,
		BlockFragment: h2.block(":method", "CONNECT", ":authority", authority)})
	if o := h2.await(1, 5*time.Second); o.status != "403" {
		t.Fatalf("CONNECT stream: %+v, want 403", o)
	}
	if n := len(w.up.requests()); n != 0 {
		t.Fatalf("upstream saw %d requests", n)
	}
}

// A :path in absolute form (naming another host or not) is malformed in
// HTTP/2: the stream is reset and nothing reaches an upstream.
func TestH2AbsolutePathRefused(t *testing.T) {
	w := newWorld(t)
	h := w.rawH2(t, "api.example.test")
	authority := net.JoinHostPort("api.example.test", strconv.Itoa(w.up.port))
	other := net.JoinHostPort("other.example.test", strconv.Itoa(w.up.port))
	for i, path := range []string{"https://" + other + "/v1/x", "https://" + authority + "/v1/x"} {
		id := uint32(2*i + 1)
		if err := h.request(id, true, "GET", authority, path); err != nil {
			t.Fatal(err)
		}
		if o := h.await(id, 5*time.Second); o.status == "200" || o.timeout {
			t.Fatalf(":path %s: %+v, want the stream refused", path, o)
		}
	}
	if n := len(w.up.requests()); n != 0 {
		t.Fatalf("upstream saw %d requests", n)
	}
}

// Streams that stall their bodies hold scan memory only for BodyTimeout: one
// tenant filling the budget with them delays another tenant's upload by
// that much, never refuses it.
func TestH2StalledStreamsReleaseScanMemory(t *testing.T) {
	w := h2Limited(t)
	w.gw.Scanner = &scanner.Scanner{Key: []byte("0123456789abcdef0123456789abcdef")}
	w.gw.ScanMemory = 4 << 20
	w.gw.ScanWait = 8 * time.Second
	authority := net.JoinHostPort("other.example.test", strconv.Itoa(w.up.port))
	for range 2 {
		h := w.rawH2(t, "other.example.test")
		for id := uint32(1); id <= 7; id += 2 {
			// 1 MiB announced, nothing sent: each holds 1 MiB of the 4.
			if err := h.request(id, false, "POST", authority, "/upload", "content-length", strconv.Itoa(1<<20)); err != nil {
				t.Fatal(err)
			}
		}
	}
	time.Sleep(100 * time.Millisecond)
	globex := w.client("globex", w.tokens["globex"], w.tenantRoots("globex"))
	start := time.Now()
	resp, err := globex.Post(w.url("other.example.test", "/globex"), "text/plain", strings.NewReader(strings.Repeat("a", 1<<20)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("globex upload behind acme's stalled streams: %d %s", resp.StatusCode, resp.Header.Get("Sluice-Reason"))
	}
	if d := time.Since(start); d > 6*time.Second {
		t.Errorf("globex waited %v", d)
	}
}

// A bodiless HTTP/2 stream goes upstream on a pooled HTTP/1.1 connection.
// A length or transfer coding it declares without sending a body must not
// go with it: the upstream would read the next request on that connection
// as the body (a desync that hides one request inside another).
func TestH2DeclaredBodyWithoutBodyCannotDesyncUpstream(t *testing.T) {
	smuggled := "GET /v1/hidden HTTP/1.1\r\nHost: api.example.test\r\n\r\n"
	for name, fields := range map[string][]string{
		"content-length":    {"content-length", strconv.Itoa(len(smuggled))},
		"transfer-encoding": {"transfer-encoding", "chunked"},
		"both":              {"content-length", "5", "transfer-encoding", "chunked"},
	} {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t)
			authority := net.JoinHostPort("api.example.test", strconv.Itoa(w.up.port))
			h := w.rawH2(t, "api.example.test")
			if err := h.request(1, true, "GET", authority, "/v1/first", fields...); err != nil {
				t.Fatal(err)
			}
			first := h.await(1, 5*time.Second)
			if err := h.request(3, true, "GET", authority, "/v1/second"); err != nil {
				t.Fatal(err)
			}
			second := h.await(3, 5*time.Second)
			if second.status != "200" {
				t.Fatalf("the stream after the one that declared a body: %+v, want 200", second)
			}
			var paths []string
			for _, r := range w.up.requests() {
				paths = append(paths, r.URL.Path)
				if r.ContentLength > 0 || len(r.TransferEncoding) > 0 || r.Header.Get("Content-Length") != "" {
					t.Errorf("upstream got %s with a body declared (%d, %v): a body that never came", r.URL.Path, r.ContentLength, r.TransferEncoding)
				}
			}
			want := "/v1/first,/v1/second"
			if first.status != "200" {
				want = "/v1/second" // refused before forwarding: as good
			}
			if got := strings.Join(paths, ","); got != want {
				t.Fatalf("upstream saw %s, want %s (first stream: %+v)", got, want, first)
			}
		})
	}
}
