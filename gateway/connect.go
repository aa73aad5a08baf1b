package gateway

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/sluice-egress/sluice/gateway/guard"
	"github.com/sluice-egress/sluice/rules"
)

// connect handles CONNECT host:port: refuse, tunnel blind (passthrough) or
// open the TLS inside with the tenant's CA (inspect).
func (g *Gateway) connect(w http.ResponseWriter, r *http.Request, id rules.Identity) {
	rawHost, port := splitHostPortDefault(r.Host, -1)
	host, err := rules.NormalizeHost(rawHost)
	if err != nil || port <= 0 {
		g.refuse(w, r, refusal{id: id, status: http.StatusBadRequest, reason: rules.ReasonBadHost,
			host: rawHost, port: port, msg: "CONNECT needs host:port with a valid host name"})
		return
	}
	d := g.Policy.Decide(rules.Query{Identity: id, Host: host, Port: port, Stage: rules.StageConnect})
	if d.Action == rules.Deny {
		// Shadow mode, or a hold for review (hold.go); a Deny was answered.
		if d = g.reviewConnect(w, r, id, d, host, port); d.Action == rules.Deny {
			return
		}
	}
	if (d.Action == rules.Passthrough || d.Action == rules.Inspect) && !g.scanHost(w, r, id, d, rawHost, host, port) {
		return
	}
	switch d.Action {
	case rules.Passthrough:
		g.passthrough(w, r, id, d, host, port)
	case rules.Inspect:
		g.inspect(w, r, id, d, host, port)
	default:
		g.refuse(w, r, policyRefusal(id, d, host, port, ""))
	}
}

// hijack takes over the client connection after a 200 to CONNECT. Bytes the
// client already sent after the CONNECT (a pipelined ClientHello) may sit in
// the server's buffered reader: they are handed on, not lost.
func hijack(w http.ResponseWriter) (net.Conn, error) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		return nil, errors.New("gateway: connection cannot be hijacked (HTTP/2 client connection?)")
	}
	conn, brw, err := hj.Hijack()
	if err != nil {
		return nil, err
	}
	if _, err := conn.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
		conn.Close()
		return nil, err
	}
	return withBuffered(conn, brw.Reader), nil
}

func withBuffered(conn net.Conn, br *bufio.Reader) net.Conn {
	n := br.Buffered()
	if n == 0 {
		return conn
	}
	peeked, _ := br.Peek(n)
	return &prefixConn{Conn: conn, r: io.MultiReader(bytes.NewReader(bytes.Clone(peeked)), conn)}
}

// prefixConn reads from r (buffered bytes, then the connection) and writes to Conn.
type prefixConn struct {
	net.Conn
	r io.Reader
}

func (c *prefixConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// passthrough tunnels blind to a host configured so. The address is still
// checked by the guard, and the ClientHello's SNI must name the CONNECT host.
func (g *Gateway) passthrough(w http.ResponseWriter, r *http.Request, id rules.Identity, d rules.Decision, host string, port int) {
	dctx, cancel := context.WithTimeout(r.Context(), g.upstreamConnectTimeout())
	up, err := g.Dialer.Dial(dctx, guard.Target{Host: host, Port: port, Allow: d.AllowAddresses})
	cancel()
	if err != nil {
		g.refuse(w, r, dialRefusal(id, err, host, port, ""))
		return
	}
	client, err := hijack(w)
	if err != nil {
		up.Close()
		g.logger().Warn("hijack failed", logHost, host, logErr, err)
		return
	}
	g.passthroughConn(r, client, up, id, d, host, port)
}

// passthroughConn splices client and up once the ClientHello names host; shared by
// CONNECT and the transparent listener. r is the CONNECT (or its stand-in) for events.
func (g *Gateway) passthroughConn(r *http.Request, client, up net.Conn, id rules.Identity, d rules.Decision, host string, port int) {
	t := g.track(connectQuery(id, host, port), rules.Passthrough, client, up)
	if t == nil {
		return
	}
	g.observe(id, d, host, port, http.MethodConnect, "")
	defer g.untrack(t)

	client.SetReadDeadline(time.Now().Add(g.handshakeTimeout()))
	hello, seen, err := peekClientHello(client)
	if err != nil || !sniMatches(hello.ServerName, host) {
		g.record(r.Context(), r, refusal{id: id, reason: ReasonDomainFronting, host: host, port: port})
		return
	}
	// Both ways cross the client connection: it sees when the tunnel idles.
	ic := newIdleConn(client, g.tunnelIdleTimeout())
	splice(&prefixConn{Conn: ic, r: io.MultiReader(bytes.NewReader(seen), ic)}, up)
}

// connectQuery is the policy question a CONNECT asked.
func connectQuery(id rules.Identity, host string, port int) rules.Query {
	return rules.Query{Identity: id, Host: host, Port: port, Stage: rules.StageConnect}
}

// sniMatches reports whether the SNI a client sent fits the CONNECT host. An
// IP literal CONNECT carries no SNI; a name must be repeated exactly.
func sniMatches(sni, host string) bool {
	if sni == "" {
		return isIPLiteral(host)
	}
	n, err := rules.NormalizeHost(sni)
	return err == nil && n == host
}

func isIPLiteral(host string) bool { return net.ParseIP(host) != nil }

// splice copies both ways until either side ends, then closes both. One
// way runs in the caller's goroutine: an idle tunnel costs two goroutines,
// not three.
func splice(a, b net.Conn) {
	var once sync.Once
	closeBoth := func() { once.Do(func() { a.Close(); b.Close() }) }
	done := make(chan struct{})
	go func() { copyConn(a, b); closeBoth(); close(done) }()
	copyConn(b, a)
	closeBoth()
	<-done
}

// smallCopyBuf is what a tunnel's copy holds while it waits: enough for a
// request or a TLS record's worth of a conversation.
const smallCopyBuf = 2 << 10

// copyConn is io.Copy with a buffer sized to the traffic. io.Copy holds
// 32 KiB each way for the tunnel's life, idle or not (64 KiB of an idle
// passthrough tunnel's heap); this holds a small buffer while it waits,
// borrows a large one from copyBuffers once a read fills the small one,
// and gives it back once a read is short again.
func copyConn(dst io.Writer, src io.Reader) {
	small := make([]byte, smallCopyBuf)
	buf, big := small, []byte(nil)
	defer func() {
		if big != nil {
			copyBuffers.Put(big)
		}
	}()
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
		switch {
		case big == nil && n == len(small):
			big = copyBuffers.Get()
			buf = big
		case big != nil && n < len(small):
			copyBuffers.Put(big)
			buf, big = small, nil
		}
	}
}

// inspect opens the client's TLS with a leaf from the tenant's CA and serves
// the requests inside, each one checked before it is forwarded.
func (g *Gateway) inspect(w http.ResponseWriter, r *http.Request, id rules.Identity, d rules.Decision, host string, port int) {
	if g.Leaf == nil {
		g.refuse(w, r, refusal{id: id, status: http.StatusServiceUnavailable, reason: ReasonCAUnavailable,
			host: host, port: port, msg: "the gateway has no CA to inspect with"})
		return
	}
	// Mint (or fetch) the leaf before answering 200, so that a CA failure is
	// an HTTP error the client can read rather than a broken handshake.
	leaf, err := g.Leaf(id.Tenant, host)
	if err != nil {
		g.logger().Error("leaf certificate", logTenant, id.Tenant, logHost, host, logErr, err)
		g.refuse(w, r, refusal{id: id, status: http.StatusServiceUnavailable, reason: ReasonCAUnavailable,
			host: host, port: port, msg: "the tenant CA could not sign for this host"})
		return
	}
	client, err := hijack(w)
	if err != nil {
		g.logger().Warn("hijack failed", logHost, host, logErr, err)
		return
	}
	g.inspectConn(r, client, id, host, port, leaf)
}

// inspectConn opens client's TLS with leaf and serves the requests inside; shared by
// CONNECT and the transparent listener. r is the CONNECT (or its stand-in) for events.
func (g *Gateway) inspectConn(r *http.Request, client net.Conn, id rules.Identity, host string, port int, leaf *tls.Certificate) {
	var fronted bool
	cfg := g.sandboxTLS()
	// h2 and http/1.1: either way every request (stream) is served, and
	// checked, one by one (h2.go).
	cfg.NextProtos = g.innerProtos()
	// Every ClientHello, resumed or not: a resumed handshake asks
	// GetCertificate nothing.
	cfg.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
		if !sniMatches(hello.ServerName, host) {
			fronted = true
			return nil, errors.New("SNI does not match the CONNECT host")
		}
		return nil, nil
	}
	cfg.GetCertificate = func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return leaf, nil }
	// Tickets resume only into a tunnel of this tenant, host and leaf (tickets.go).
	cfg.SetSessionTicketKeys(g.tickets.forTunnel(id.Tenant, host, leaf))
	tlsConn := tls.Server(client, cfg)
	t := g.track(connectQuery(id, host, port), rules.Inspect, tlsConn)
	if t == nil {
		return
	}
	untrack := sync.OnceFunc(func() { g.untrack(t) })

	// A deadline on the connection, not a context: HandshakeContext runs a
	// goroutine per handshake to watch the context. Shutdown, a policy change
	// and the run's end close the tracked connection, which ends a handshake
	// as well.
	client.SetDeadline(time.Now().Add(g.handshakeTimeout()))
	err := tlsConn.Handshake()
	if err == nil {
		err = client.SetDeadline(time.Time{})
	}
	if err != nil {
		untrack()
		reason := ReasonTLSHandshake
		if fronted {
			reason = ReasonDomainFronting
		}
		g.record(r.Context(), r, refusal{id: id, reason: reason, host: host, port: port})
		return
	}

	tun := &innerHandler{g: g, id: id, host: host, port: port, client: r.RemoteAddr}
	if tlsConn.ConnectionState().NegotiatedProtocol == "h2" {
		defer untrack()
		g.serveH2(context.WithoutCancel(r.Context()), tlsConn, t, tun)
		return
	}
	// The CONNECT's context, not the CONNECT: the tunnel's server keeps it for its life.
	// The watch lets the gateway's own HTTP/1.1 client learn that the client
	// left from the tunnel's connection itself (upstream1.go).
	watch := &clientWatch{}
	base := context.WithValue(context.WithoutCancel(r.Context()), clientWatchKey{}, watch)
	srv := &http.Server{
		Handler:           tun,
		ReadHeaderTimeout: g.readHeaderTimeout(),
		IdleTimeout:       g.idleTimeout(),
		MaxHeaderBytes:    g.serverMaxHeaderBytes(),
		ErrorLog:          discardLog,
		ConnContext:       func(context.Context, net.Conn) context.Context { return base },
		// HTTP/1.1 was negotiated: no HTTP/2 set-up for this server (an empty map, not
		// nil, is what tells net/http so).
		TLSNextProto: map[string]func(*http.Server, *tls.Conn, http.Handler){},
	}
	// An idle connection is parked between requests (park.go); closing it
	// for good untracks it. replyConn gives net/http's own canned refusals a
	// Sluice-Reason.
	l := newParkListener(&replyConn{Conn: tlsConn, log: g.logger(), client: r.RemoteAddr}, untrack,
		func(d int) { g.parkedTunnels.Add(int64(d)) })
	l.watch = watch
	srv.ConnState = func(c net.Conn, s http.ConnState) {
		if pc, ok := c.(*parkConn); ok {
			pc.setIdle(s == http.StateIdle)
		}
		if s == http.StateActive && !t.served.Load() {
			// A request's header was read: net/http serves it unless it
			// is shutting down already (it drops a request whose header
			// ends after that), and Shutdown lets it finish.
			t.served.Store(true)
		}
	}
	if !t.setServer(srv) {
		untrack() // Shutdown began during the handshake; nothing was served
		return
	}
	// On a goroutine of its own: the one this runs on (and the CONNECT's
	// connection state it holds) need not stay for an idle tunnel's life.
	go srv.Serve(l)
}

// innerHandler serves the requests inside one inspected tunnel.
type innerHandler struct {
	g      *Gateway
	id     rules.Identity
	host   string
	port   int
	client string
}

func (h *innerHandler) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	g := h.g
	r.RemoteAddr = h.client
	w := &guardedWriter{ResponseWriter: rw}
	defer g.recoverRequest(w, r, &h.id)
	if !g.checkRequestLimits(w, r, h.id) {
		return
	}
	// The tunnel was opened for one authority: a request for another one is
	// domain fronting, whatever the policy says about that other host.
	reqHost, reqPort := splitHostPortDefault(r.Host, h.port)
	if n, err := rules.NormalizeHost(reqHost); err != nil || n != h.host || reqPort != h.port {
		g.refuse(w, r, refusal{id: h.id, status: http.StatusForbidden, reason: ReasonDomainFronting,
			host: h.host, port: h.port, path: r.URL.Path,
			msg: "the request's Host differs from the CONNECT host"})
		return
	}
	ws, ok := upgradeKind(r)
	if !ok {
		g.refuse(w, r, refusal{id: h.id, status: http.StatusForbidden, reason: ReasonUpgradeNotAllowed,
			host: h.host, port: h.port, path: r.URL.Path, msg: "only WebSocket upgrades are supported"})
		return
	}
	if r.Method == http.MethodConnect {
		// A CONNECT inside a tunnel is no request an origin serves: forwarded,
		// it would ask the upstream (a proxy, perhaps) for a tunnel of its own.
		g.refuse(w, r, refusal{id: h.id, status: http.StatusForbidden, reason: rules.ReasonMethodNotAllowed,
			host: h.host, port: h.port, msg: "CONNECT is not allowed inside a tunnel"})
		return
	}
	// A gRPC body is held and timed message by message (grpc.go), not whole.
	var hold *scanHold
	if !isGRPC(r) || g.Scanner == nil {
		r, hold, ok = g.admitBody(w, r, h.id, h.host, h.port)
		if !ok {
			return
		}
	}
	defer hold.release()
	d := g.decideRequest(h.id, h.host, h.port, r, ws)
	if d.Action != rules.Allow && !bodyTimedOut(r) {
		// Shadow mode, or a hold for review (hold.go); else refused.
		if d = g.reviewRequest(w, r, h.id, d, h.host, h.port, ws); d.Action != rules.Allow {
			return
		}
	}
	switch {
	case bodyTimedOut(r):
		g.refuseBodyTimeout(w, r, h.id, h.host, h.port)
	default:
		fw, keep, ok, done := g.scanRequest(w, r, h.id, h.host, h.port)
		defer done()
		if ok {
			g.forward(fw, r, h.id, d, "https", h.host, h.port, keep)
		}
	}
}

// upgradeKind reports whether r asks for a WebSocket upgrade; ok is false for
// any other upgrade (h2c and friends), which would leave the checks behind.
func upgradeKind(r *http.Request) (websocket, ok bool) {
	up := r.Header.Get("Upgrade")
	if up == "" && !headerHasToken(r.Header, "Connection", "upgrade") {
		return false, true
	}
	return strings.EqualFold(strings.TrimSpace(up), "websocket"), strings.EqualFold(strings.TrimSpace(up), "websocket")
}

func headerHasToken(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for _, part := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(part), token) {
				return true
			}
		}
	}
	return false
}

// oneConnListener hands one connection to http.Server.Serve. Accept then
// blocks until the listener is closed (Shutdown closes it and waits for
// Serve to return before it closes idle connections). wait blocks until the
// connection itself is closed.
type oneConnListener struct {
	conn      net.Conn
	once      sync.Once
	connDone  chan struct{}
	closeOnce sync.Once
	doneOnce  sync.Once
	closed    chan struct{}
}

// newOneConnListener returns the listener of c.
func newOneConnListener(c net.Conn) *oneConnListener {
	l := &oneConnListener{connDone: make(chan struct{}), closed: make(chan struct{})}
	l.conn = &notifyConn{Conn: c, onClose: func() {
		l.doneOnce.Do(func() { close(l.connDone) })
		l.Close()
	}}
	return l
}

func (l *oneConnListener) Accept() (net.Conn, error) {
	var c net.Conn
	l.once.Do(func() { c = l.conn })
	if c != nil {
		return c, nil
	}
	<-l.closed
	return nil, net.ErrClosed
}

func (l *oneConnListener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return nil
}

func (l *oneConnListener) Addr() net.Addr { return l.conn.LocalAddr() }
func (l *oneConnListener) wait()          { <-l.connDone }

type notifyConn struct {
	net.Conn
	onClose func()
}

func (c *notifyConn) Close() error {
	err := c.Conn.Close()
	c.onClose()
	return err
}

// peekClientHello reads the client's ClientHello without answering it and
// returns the bytes it read, to be replayed before the rest.
func peekClientHello(c net.Conn) (*tls.ClientHelloInfo, []byte, error) {
	var seen bytes.Buffer
	var hello *tls.ClientHelloInfo
	errStop := errors.New("hello read")
	err := tls.Server(readOnlyConn{r: io.TeeReader(c, &seen)}, &tls.Config{
		GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
			hello = &tls.ClientHelloInfo{ServerName: h.ServerName}
			return nil, errStop
		},
	}).Handshake()
	if hello == nil {
		if err == nil {
			err = errors.New("no ClientHello")
		}
		return nil, nil, err
	}
	return hello, seen.Bytes(), nil
}

// readOnlyConn lets crypto/tls parse a ClientHello without writing back.
type readOnlyConn struct {
	net.Conn
	r io.Reader
}

func (c readOnlyConn) Read(p []byte) (int, error)         { return c.r.Read(p) }
func (c readOnlyConn) Write(p []byte) (int, error)        { return 0, io.ErrClosedPipe }
func (c readOnlyConn) Close() error                       { return nil }
func (c readOnlyConn) LocalAddr() net.Addr                { return nil }
func (c readOnlyConn) RemoteAddr() net.Addr               { return nil }
func (c readOnlyConn) SetDeadline(t time.Time) error      { return nil }
func (c readOnlyConn) SetReadDeadline(t time.Time) error  { return nil }
func (c readOnlyConn) SetWriteDeadline(t time.Time) error { return nil }
