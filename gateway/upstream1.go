package gateway

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/sluice-egress/sluice/gateway/guard"
	"github.com/sluice-egress/sluice/rules"
)

// The HTTP/1.1 path upstream for bodiless GET, HEAD and OPTIONS requests,
// which is most of what an agent sends (package and git fetches, API reads).
//
// httputil.ReverseProxy and http.Transport do per request what such a
// request does not need: a clone of the request and its headers, a cancel
// context, a hand-off to the connection's read and write goroutines and back,
// a media-type parse of every answer. This path writes the request to a
// pooled connection and reads the answer with http.ReadResponse in the
// handler's own goroutine, whether the client spoke HTTP/1.1 or HTTP/2.
// Requests with a body, WebSocket upgrades and other methods keep going
// through ReverseProxy (forward.go).
//
// Its connections are kept per tenant, dial allowance and authority, as the
// transports are: none crosses tenants or reaches an address the request's
// own entry did not open.

const (
	h1IdlePerKey = 32  // idle connections kept per tenant, allowance and authority
	h1IdleTotal  = 256 // and in all
	h1IdleFor    = 90 * time.Second
	// h1MaxHeaderBytes bounds an upstream's response header, and the
	// interim (1xx) answers before it: ReadResponse reads any size.
	h1MaxHeaderBytes = 1 << 20
)

// bodilessH1 reports whether r goes upstream on the direct HTTP/1.1 path:
// a GET, HEAD or OPTIONS without a body and without an upgrade. These
// methods are the ones that may be sent again when a kept-alive connection
// turns out to have been closed by the upstream.
//
// HTTP/2 streams take it too: 16 such GETs as streams of one connection
// allocate 29 % less this way than over an HTTP/2 upstream connection and
// cost the gateway less CPU (docs/http2.md), and nothing in such a request
// needs HTTP/2 end to end (gRPC calls are POSTs with a body).
func bodilessH1(r *http.Request, ws bool) bool {
	if ws || len(r.TransferEncoding) > 0 {
		return false
	}
	switch r.ProtoMajor {
	case 1:
		if r.Body != nil && r.Body != http.NoBody {
			return false
		}
	case 2:
		// Every stream has a Body; a length of 0 means that its headers
		// ended it (a length they declare anyway is not forwarded:
		// notForwarded) or that it declared 0, and the server resets a
		// stream that sends more than it declared.
		if r.ContentLength != 0 {
			return false
		}
	default:
		return false
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return true
	}
	return false
}

// forwardH1 sends r upstream to scheme://host:port on a pooled HTTP/1.1
// connection and copies the answer to w; the counterpart of forward's
// ReverseProxy for what bodilessH1 admits.
func (g *Gateway) forwardH1(w http.ResponseWriter, r *http.Request, id rules.Identity, d rules.Decision, scheme, host string, port int, authority string, inj *injection, keep string) {
	out := r
	if inj != nil {
		// The swap works on a copy: r stays as the scan saw it, for events.
		out = r.Clone(r.Context())
		inj.apply(out)
	}
	pool := g.h1Pool()
	key := h1Key{tenant: id.Tenant, allow: allowKey(d.AllowAddresses), authority: authority, tls: scheme == "https"}
	hostHeader := upstreamHost(r.Host, host, authority)
	if err := checkH1Request(out, hostHeader); err != nil {
		g.refuse(w, r, dialRefusal(id, err, host, port, r.URL.Path))
		return
	}
	res, c, err := g.roundTripH1(r.Context(), pool, key, out, host, port, d.AllowAddresses, hostHeader)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			// The client left: no answer at all. Returning would let net/http
			// write a 200 that no upstream gave, which a client that only
			// stopped sending would read.
			panic(http.ErrAbortHandler)
		}
		g.refuse(w, r, dialRefusal(id, err, host, port, r.URL.Path))
		return
	}
	body := &h1Body{rc: res.Body, c: c, close: res.Close}
	res.Body = body
	defer body.release()

	removeHopByHop(res.Header)
	if err := g.observed(id, d, host, port, r.Method, keep, g.modifyResponse(inj))(res); err != nil {
		g.refuse(w, r, dialRefusal(id, err, host, port, r.URL.Path))
		return
	}
	h := w.Header()
	for k, vv := range res.Header {
		if _, ok := h[k]; ok {
			h[k] = append(h[k], vv...)
		} else {
			h[k] = vv // ReadResponse's own map: nothing else holds it
		}
	}
	announced := len(res.Trailer)
	if announced > 0 {
		keys := make([]string, 0, announced)
		for k := range res.Trailer {
			keys = append(keys, k)
		}
		h.Add("Trailer", strings.Join(keys, ", "))
	}
	w.WriteHeader(res.StatusCode)
	// As ReverseProxy does: a body of unknown length or an event stream is
	// flushed write by write, so that long polls are not held back.
	flush := res.ContentLength < 0 || strings.HasPrefix(strings.ToLower(res.Header.Get("Content-Type")), "text/event-stream")
	if err := copyAnswer(w, res.Body, flush); err != nil {
		// Ending the handler normally would let net/http end a chunked body
		// as if it were whole: the client's connection is cut instead.
		body.release()
		panic(http.ErrAbortHandler)
	}
	res.Body.Close() // fills res.Trailer
	if len(res.Trailer) == 0 {
		return
	}
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	if len(res.Trailer) == announced {
		for k, vv := range res.Trailer {
			h[k] = append(h[k], vv...)
		}
		return
	}
	for k, vv := range res.Trailer {
		for _, v := range vv {
			h.Add(http.TrailerPrefix+k, v)
		}
	}
}

// copyAnswer copies an upstream body to w with a pooled buffer.
func copyAnswer(w http.ResponseWriter, body io.Reader, flush bool) error {
	buf := copyBuffers.Get()
	defer copyBuffers.Put(buf)
	f, _ := w.(http.Flusher)
	for {
		n, err := body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return werr
			}
			if flush && f != nil {
				f.Flush()
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// roundTripH1 writes out to a pooled connection (or a new one) and reads the
// final answer's header. A pooled connection the upstream closed while it
// idled fails before any byte of an answer: the request, which has no body
// and a method that may be repeated, is then sent once more on a new one.
func (g *Gateway) roundTripH1(ctx context.Context, pool *h1Pool, key h1Key, out *http.Request, host string, port int, allow []netip.Prefix, hostHeader string) (*http.Response, *h1Conn, error) {
	for {
		c := pool.get(key)
		reused := c != nil
		if c == nil {
			var err error
			if c, err = g.dialH1(ctx, pool, key, host, port, allow); err != nil {
				return nil, nil, err
			}
		}
		// A client that leaves ends the wait for the answer and its copy.
		if w, ok := ctx.Value(clientWatchKey{}).(*clientWatch); ok {
			if !w.watch(c) {
				c.conn.Close()
				return nil, nil, context.Canceled
			}
			c.watch = w
		} else {
			c.stop = context.AfterFunc(ctx, func() { c.conn.SetDeadline(time.Unix(1, 0)) })
		}
		res, err := g.exchangeH1(c, out, hostHeader)
		if err == nil {
			return res, c, nil
		}
		// The watch may cut the exchange before net/http cancels ctx: the
		// error is then the deadline's, and still means the client left.
		stayed := c.unwatch()
		c.conn.Close()
		if !stayed {
			return nil, nil, context.Canceled
		}
		if !reused || c.read > 0 || ctx.Err() != nil || isTimeout(err) {
			if ctx.Err() != nil {
				err = ctx.Err()
			}
			return nil, nil, err
		}
	}
}

// exchangeH1 writes one request and reads its final answer's header, within
// the upstream header timeout.
func (g *Gateway) exchangeH1(c *h1Conn, out *http.Request, hostHeader string) (*http.Response, error) {
	c.read = 0
	if err := writeH1Request(c.bw, out, hostHeader); err != nil {
		return nil, err
	}
	c.conn.SetReadDeadline(time.Now().Add(g.upstreamHeaderTimeout()))
	c.left = h1MaxHeaderBytes
	for {
		res, err := http.ReadResponse(c.br, out)
		if err != nil {
			return nil, err
		}
		switch {
		case res.StatusCode == http.StatusSwitchingProtocols:
			return nil, errors.New("the upstream switched protocols on a request that asked for no upgrade")
		case res.StatusCode >= 200:
			c.left = math.MaxInt64
			c.conn.SetReadDeadline(time.Time{})
			return res, nil
		}
		// An interim answer (103 Early Hints, …) is not passed on, where
		// ReverseProxy passes it: a hint the client can do without. Read
		// on, within the same header budget (as http.Transport does).
	}
}

// hopByHop are the headers that belong to one connection (RFC 9110, 7.6.1),
// which ReverseProxy drops both ways too.
var hopByHop = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

// notForwarded: the forwarding headers ReverseProxy's Rewrite drops, a
// length for a body there is none of, and a Host beside the one written
// (net/http keeps none in a request's Header; two would be read two ways).
var notForwarded = []string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto", "Content-Length", "Host"}

// removeHopByHop deletes the hop-by-hop headers of h and those its
// Connection header names.
func removeHopByHop(h http.Header) {
	for _, v := range h["Connection"] {
		for name := range strings.SplitSeq(v, ",") {
			if name = trimOWS(name); name != "" {
				delete(h, http.CanonicalHeaderKey(name))
			}
		}
	}
	for _, k := range hopByHop {
		delete(h, k)
	}
}

// trimOWS trims the optional white space around a list element.
func trimOWS(s string) string { return strings.Trim(s, " \t") }

// checkH1Request reports what of out cannot be written as HTTP/1.1, as
// http.Transport checks it: a target or Host with a byte that would end the
// request line, a header name that is no token, a value with a line break
// or a NUL. So an injected credential cannot add a header line.
func checkH1Request(out *http.Request, hostHeader string) error {
	target := out.URL.RequestURI()
	for i := 0; i < len(target); i++ {
		if target[i] <= ' ' || target[i] == 0x7f {
			return errors.New("gateway: the request target holds a byte HTTP/1.1 cannot carry")
		}
	}
	if !httpguts.ValidHostHeader(hostHeader) {
		return errors.New("gateway: invalid Host for the upstream")
	}
	for k, vv := range out.Header {
		if !httpguts.ValidHeaderFieldName(k) {
			return errors.New("gateway: invalid header name for the upstream")
		}
		for _, v := range vv {
			if !httpguts.ValidHeaderFieldValue(v) {
				// Not named: a header's name is request data, and this error
				// reaches the refusal and its incident.
				return errors.New("gateway: a header value holds a byte HTTP/1.1 cannot carry")
			}
		}
	}
	return nil
}

// writeH1Request writes out's request line and header to bw, once
// checkH1Request passed them: its headers without the hop-by-hop ones,
// those named by its Connection header, the gateway's own
// (strippedHeaders) and forwarding headers, and with the upstream's Host.
func writeH1Request(bw *bufio.Writer, out *http.Request, hostHeader string) error {
	var named []string // headers the Connection header names
	for _, v := range out.Header["Connection"] {
		for name := range strings.SplitSeq(v, ",") {
			if name = trimOWS(name); name != "" {
				named = append(named, name)
			}
		}
	}
	bw.WriteString(out.Method)
	bw.WriteByte(' ')
	bw.WriteString(out.URL.RequestURI())
	bw.WriteString(" HTTP/1.1\r\nHost: ")
	bw.WriteString(hostHeader)
	bw.WriteString("\r\n")
	for k, vv := range out.Header {
		if dropped(k, named) {
			continue
		}
		for _, v := range vv {
			if k == "User-Agent" && v == "" {
				continue
			}
			bw.WriteString(k)
			bw.WriteString(": ")
			bw.WriteString(v)
			bw.WriteString("\r\n")
		}
	}
	if httpguts.HeaderValuesContainsToken(out.Header["Te"], "trailers") {
		bw.WriteString("Te: trailers\r\n")
	}
	bw.WriteString("\r\n")
	return bw.Flush()
}

// dropped reports whether header k is not forwarded.
func dropped(k string, named []string) bool {
	for _, list := range [...][]string{hopByHop, strippedHeaders, notForwarded} {
		for _, h := range list {
			if k == h {
				return true
			}
		}
	}
	for _, n := range named {
		if strings.EqualFold(k, n) {
			return true
		}
	}
	return false
}

// allowKey spells a dial allowance for a pool key.
func allowKey(allow []netip.Prefix) string {
	if len(allow) == 0 {
		return ""
	}
	var b strings.Builder
	for _, p := range allow {
		b.WriteString(p.String())
		b.WriteByte('|')
	}
	return b.String()
}

// h1Pool returns the pool of upstream HTTP/1.1 connections, verified with
// the current roots. Read without g.mu: every small request asks.
func (g *Gateway) h1Pool() *h1Pool {
	if p := g.h1.Load(); p != nil {
		return p
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if p := g.h1.Load(); p != nil {
		return p
	}
	p := &h1Pool{tls: &tls.Config{RootCAs: g.RootCAs, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}}
	g.h1.Store(p)
	return p
}

// dialH1 opens a checked upstream connection for key, with TLS verified
// against the pool's roots where key says so.
func (g *Gateway) dialH1(ctx context.Context, pool *h1Pool, key h1Key, host string, port int, allow []netip.Prefix) (*h1Conn, error) {
	dctx, cancel := context.WithTimeout(ctx, g.upstreamConnectTimeout())
	defer cancel()
	conn, err := g.Dialer.Dial(dctx, guard.Target{Host: host, Port: port, Allow: allow})
	if err != nil {
		return nil, err
	}
	if key.tls {
		cfg := pool.tls.Clone()
		cfg.ServerName = host
		tc := tls.Client(conn, cfg)
		tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := tc.HandshakeContext(tctx)
		cancel()
		if err != nil {
			conn.Close()
			return nil, err
		}
		conn = tc
	}
	c := &h1Conn{pool: pool, key: key, conn: conn, left: math.MaxInt64}
	c.br = bufio.NewReader(c)
	c.bw = bufio.NewWriter(conn)
	return c, nil
}

// h1Key names the connections one request may use.
type h1Key struct {
	tenant, allow, authority string
	tls                      bool
}

// h1Pool keeps idle upstream HTTP/1.1 connections for reuse.
type h1Pool struct {
	tls    *tls.Config
	mu     sync.Mutex
	idle   map[h1Key][]*h1Conn
	n      int
	closed bool
}

// h1Conn is one upstream connection with its buffers.
type h1Conn struct {
	pool  *h1Pool
	key   h1Key
	conn  net.Conn
	br    *bufio.Reader
	bw    *bufio.Writer
	left  int64 // bytes it may still read: bounds a response header
	read  int64 // bytes read for the current request
	timer *time.Timer
	// The current request's watch on its client: its tunnel's, or else
	// (plain HTTP) a context.AfterFunc that stop stops.
	watch *clientWatch
	stop  func() bool
}

// unwatch ends the current request's watch on its client. False when the
// client left during it: the watch put the connection's deadline in the past.
func (c *h1Conn) unwatch() bool {
	if w := c.watch; w != nil {
		c.watch = nil
		return w.unwatch(c)
	}
	stop := c.stop
	c.stop = nil
	return stop == nil || stop()
}

// clientWatchKey is the context key of a tunnel's clientWatch.
type clientWatchKey struct{}

// clientWatch tells the exchange under way for an inspected tunnel's
// request that the client left: the tunnel's connection reports the read
// error that net/http's background read got (park.go). One per tunnel,
// where a context.AfterFunc on each request's context cost a tenth of the
// bytes a small GET allocates (the watch, the context's children map and
// its done channel).
type clientWatch struct {
	mu   sync.Mutex
	gone bool
	up   *h1Conn // the exchange under way, if any
}

// watch makes c the exchange to cut; false when the client is gone already.
func (w *clientWatch) watch(c *h1Conn) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.gone {
		return false
	}
	w.up = c
	return true
}

// unwatch ends c's watch; false when the client left during it.
func (w *clientWatch) unwatch(c *h1Conn) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.up == c {
		w.up = nil
	}
	return !w.gone
}

// clientGone cuts the exchange under way: its reads and writes fail at once.
func (w *clientWatch) clientGone() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.gone {
		return
	}
	w.gone = true
	if w.up != nil {
		w.up.conn.SetDeadline(time.Unix(1, 0))
	}
}

func (c *h1Conn) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, errors.New("the upstream's response header is too large")
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.conn.Read(p)
	c.left -= int64(n)
	c.read += int64(n)
	return n, err
}

// get takes an idle connection for key; nil: none.
func (p *h1Pool) get(key h1Key) *h1Conn {
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		list := p.idle[key]
		if len(list) == 0 {
			return nil
		}
		c := list[len(list)-1]
		list[len(list)-1] = nil
		p.idle[key] = list[:len(list)-1]
		p.n--
		if c.timer.Stop() {
			return c
		}
		// Its idle time ran out just now: expire closes it.
	}
}

// put keeps c for reuse, or closes it when the pool is full or closed.
func (p *h1Pool) put(c *h1Conn) {
	p.mu.Lock()
	if p.closed || p.n >= h1IdleTotal || len(p.idle[c.key]) >= h1IdlePerKey {
		p.mu.Unlock()
		c.conn.Close()
		return
	}
	if p.idle == nil {
		p.idle = make(map[h1Key][]*h1Conn)
	}
	p.idle[c.key] = append(p.idle[c.key], c)
	p.n++
	if c.timer == nil {
		c.timer = time.AfterFunc(h1IdleFor, func() { p.expire(c) })
	} else {
		c.timer.Reset(h1IdleFor)
	}
	p.mu.Unlock()
}

// expire closes c after it idled for h1IdleFor.
func (p *h1Pool) expire(c *h1Conn) {
	p.mu.Lock()
	list := p.idle[c.key]
	for i, x := range list {
		if x == c {
			p.idle[c.key] = append(list[:i], list[i+1:]...)
			p.n--
			break
		}
	}
	p.mu.Unlock()
	c.conn.Close()
}

// close closes the idle connections; with forget, the pool takes none back.
func (p *h1Pool) close(forget bool) {
	p.mu.Lock()
	idle := p.idle
	p.idle, p.n = nil, 0
	if forget {
		p.closed = true
	}
	p.mu.Unlock()
	for _, list := range idle {
		for _, c := range list {
			c.timer.Stop()
			c.conn.Close()
		}
	}
}

// h1Body is an upstream answer's body: read to its end on a connection the
// upstream keeps open, the connection goes back to the pool.
type h1Body struct {
	rc    io.ReadCloser
	c     *h1Conn
	close bool // the answer ends the connection
	eof   bool
	done  bool
}

func (b *h1Body) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

func (b *h1Body) Close() error {
	b.release()
	return nil
}

// release gives the connection back once the body was read to its end and
// nothing more waits on it, else closes it. It runs once.
func (b *h1Body) release() {
	if b.done {
		return
	}
	b.done = true
	if b.rc == http.NoBody {
		b.eof = true
	}
	b.rc.Close()
	// A watch that fired has put the connection's deadline in the past.
	unfired := b.c.unwatch()
	if unfired && b.eof && !b.close && b.c.br.Buffered() == 0 {
		b.c.pool.put(b.c)
		return
	}
	b.c.conn.Close()
}
