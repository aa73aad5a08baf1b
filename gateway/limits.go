package gateway

import (
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-egress/sluice/rules"
)

// Limits bound what one client, connection or request may take of the
// gateway: time, header size, connections. Every field's zero value is the
// documented default, chosen after Go's and Envoy's own.
type Limits struct {
	// ReadHeaderTimeout bounds reading a request's line and headers, on the
	// proxy port and inside inspected tunnels (slowloris). Zero: 10s.
	ReadHeaderTimeout time.Duration
	// BodyIdleTimeout is the longest pause between the bytes of a request
	// body, or of a WebSocket message under way: bytes must keep arriving.
	// Past it the client gets 408 (client-timeout), or its WebSocket closes.
	// Zero: 30s.
	BodyIdleTimeout time.Duration
	// BodyReadTimeout bounds how long the part of a body that is held for
	// scanning (up to ScanBodyLimit+1 bytes) may take to arrive, however
	// steadily it trickles; what follows, forwarded unscanned, has
	// BodyIdleTimeout only (the upstream paces it). Zero: 60s.
	BodyReadTimeout time.Duration
	// TunnelIdleTimeout closes a passthrough tunnel or a WebSocket across
	// which no byte went either way for this long. Zero: 5m.
	TunnelIdleTimeout time.Duration
	// TunnelMaxLifetime closes any tunnel (passthrough, inspected or
	// WebSocket) this long after it opened. Zero: 24h.
	TunnelMaxLifetime time.Duration
	// UpstreamConnectTimeout bounds resolving and dialing an upstream: past
	// it the client gets 504 (upstream-timeout). Zero: 10s.
	UpstreamConnectTimeout time.Duration
	// UpstreamHeaderTimeout bounds the wait for an upstream's response
	// headers once the request was sent: past it the client gets 504
	// (upstream-timeout). Zero: 90s.
	UpstreamHeaderTimeout time.Duration
	// MaxHeaderBytes bounds a request's line and headers together: a larger
	// one is answered 431 and its connection closed. Zero: 64 KiB.
	MaxHeaderBytes int
	// MaxHeaderCount bounds the number of header fields of a request: more
	// are answered 431 (header-too-large). Zero: 100.
	MaxHeaderCount int
	// MaxURLBytes bounds the request target: a longer one is answered 414
	// (url-too-long). Zero: 16 KiB.
	MaxURLBytes int
	// MaxConnsPerClient bounds the connections open at once from one client
	// address; more are answered 503 (too-many-connections) and closed.
	// Zero: 256.
	MaxConnsPerClient int
	// MaxConnsPerTenant bounds the connections open at once that carry one
	// tenant's credentials (tunnels included). Zero: 1024.
	MaxConnsPerTenant int
}

// Reasons for refusals that limits cause.
const (
	ReasonClientTimeout      = "client-timeout"
	ReasonUpstreamTimeout    = "upstream-timeout"
	ReasonHeaderTooLarge     = "header-too-large"
	ReasonURLTooLong         = "url-too-long"
	ReasonTooManyConnections = "too-many-connections"
	ReasonInternalError      = "internal-error"
)

func orDuration(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

func orInt(n, def int) int {
	if n > 0 {
		return n
	}
	return def
}

func (g *Gateway) readHeaderTimeout() time.Duration {
	return orDuration(g.Limits.ReadHeaderTimeout, 10*time.Second)
}
func (g *Gateway) bodyIdleTimeout() time.Duration {
	return orDuration(g.Limits.BodyIdleTimeout, 30*time.Second)
}
func (g *Gateway) bodyReadTimeout() time.Duration {
	return orDuration(g.Limits.BodyReadTimeout, 60*time.Second)
}

// GCPercent is the garbage collector's target a gateway's process should
// run with (sluice serve sets it unless GOGC is set). Go's default, 100,
// lets the heap grow to twice what is live before it collects: with
// thousands of idle tunnels, what opening them left behind (handshake
// buffers, the buffers net/http pools when a tunnel parks) then stays
// resident. At 50 the bench measured 25 to 31 KiB of RSS per idle inspected
// tunnel instead of 37 KiB; the CPU per request moved within the bench's
// noise (the collector is about 4% of a busy gateway's CPU profile).
const GCPercent = 50

func (g *Gateway) tunnelIdleTimeout() time.Duration {
	return orDuration(g.Limits.TunnelIdleTimeout, 5*time.Minute)
}
func (g *Gateway) tunnelMaxLifetime() time.Duration {
	return orDuration(g.Limits.TunnelMaxLifetime, 24*time.Hour)
}
func (g *Gateway) upstreamConnectTimeout() time.Duration {
	return orDuration(g.Limits.UpstreamConnectTimeout, 10*time.Second)
}
func (g *Gateway) upstreamHeaderTimeout() time.Duration {
	return orDuration(g.Limits.UpstreamHeaderTimeout, 90*time.Second)
}
func (g *Gateway) maxHeaderCount() int { return orInt(g.Limits.MaxHeaderCount, 100) }
func (g *Gateway) maxURLBytes() int    { return orInt(g.Limits.MaxURLBytes, 16<<10) }

// serverMaxHeaderBytes is MaxHeaderBytes as http.Server counts it: the
// server reads 4 KiB beyond its own limit, so that much is taken off.
func (g *Gateway) serverMaxHeaderBytes() int {
	return max(orInt(g.Limits.MaxHeaderBytes, 64<<10)-4096, 4096)
}

// checkRequestLimits refuses a request with too many header fields (431) or
// too long a target (414). net/http itself answers 431 to headers over
// MaxHeaderBytes, before any handler runs.
func (g *Gateway) checkRequestLimits(w http.ResponseWriter, r *http.Request, id rules.Identity) bool {
	if len(r.RequestURI) > g.maxURLBytes() {
		g.refuse(w, r, refusal{id: id, status: http.StatusRequestURITooLong, reason: ReasonURLTooLong,
			path: "/", msg: "the request URL is longer than the gateway accepts"})
		return false
	}
	n := 0
	for _, vs := range r.Header {
		n += len(vs)
	}
	if n > g.maxHeaderCount() {
		g.refuse(w, r, refusal{id: id, status: http.StatusRequestHeaderFieldsTooLarge, reason: ReasonHeaderTooLarge,
			msg: "the request has more header fields than the gateway accepts"})
		return false
	}
	return true
}

// connCounts counts the open client connections by client address and by
// tenant.
type connCounts struct {
	mu       sync.Mutex
	byClient map[string]int
	byTenant map[string]int
}

func (c *connCounts) add(m *map[string]int, key string, limit int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if *m == nil {
		*m = map[string]int{}
	}
	if (*m)[key] >= limit {
		return false
	}
	(*m)[key]++
	return true
}

func (c *connCounts) done(m *map[string]int, key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if (*m)[key]--; (*m)[key] <= 0 {
		delete(*m, key)
	}
}

// limitListener refuses connections over MaxConnsPerClient and counts the
// others until they close (hijacked tunnels included: they close the very
// connection this hands out).
type limitListener struct {
	net.Listener
	g *Gateway
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		client := clientAddr(c.RemoteAddr())
		if l.g.conns.add(&l.g.conns.byClient, client, orInt(l.g.Limits.MaxConnsPerClient, 256)) {
			return &countedConn{Conn: c, g: l.g, client: client}, nil
		}
		l.g.logger().Info("refused", logClient, client, logReason, ReasonTooManyConnections)
		go refuseConn(c)
	}
}

// refuseConn answers 503 on a connection that is not served, then closes it.
func refuseConn(c net.Conn) {
	defer c.Close()
	msg := "sluice: " + ReasonTooManyConnections + ": this client has as many connections open as the gateway allows\n"
	c.SetWriteDeadline(time.Now().Add(time.Second))
	fmt.Fprintf(c, "HTTP/1.1 503 Service Unavailable\r\nSluice-Reason: %s\r\nContent-Type: text/plain; charset=utf-8\r\n"+
		"Connection: close\r\nContent-Length: %d\r\n\r\n%s", ReasonTooManyConnections, len(msg), msg)
}

func clientAddr(a net.Addr) string {
	if t, ok := a.(*net.TCPAddr); ok {
		return t.IP.String()
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}

// countedConn is a client connection counted for its address and, once a
// request on it names one, its tenant.
type countedConn struct {
	net.Conn
	g      *Gateway
	client string
	once   sync.Once
	mu     sync.Mutex
	tenant string
}

// Write adds Sluice-Reason to net/http's own 431 (writeReply).
func (c *countedConn) Write(p []byte) (int, error) {
	return writeReply(c.Conn, c.g.logger(), c.client, p)
}

func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.g.conns.done(&c.g.conns.byClient, c.client)
		c.mu.Lock()
		t := c.tenant
		c.mu.Unlock()
		if t != "" {
			c.g.conns.done(&c.g.conns.byTenant, t)
		}
	})
	return err
}

type connKey struct{}

// claimConn counts r's connection for its tenant on the first request that
// names one; over MaxConnsPerTenant it answers 503 and closes it.
func (g *Gateway) claimConn(w http.ResponseWriter, r *http.Request, id rules.Identity) bool {
	c, _ := r.Context().Value(connKey{}).(*countedConn)
	if c == nil {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tenant != "" {
		return true
	}
	if !g.conns.add(&g.conns.byTenant, id.Tenant, orInt(g.Limits.MaxConnsPerTenant, 1024)) {
		w.Header().Set("Connection", "close")
		g.refuse(w, r, refusal{id: id, status: http.StatusServiceUnavailable, reason: ReasonTooManyConnections,
			msg: "the tenant has as many connections open as the gateway allows"})
		return false
	}
	c.tenant = id.Tenant
	return true
}

// idleConn is a client connection of a tunnel or WebSocket that ends when
// no byte went across it either way for idle: each read waits until idle
// after the last byte seen, whichever way it went. While a WebSocket
// message is under way (msgIdle set), the client's own bytes must keep
// coming within msgIdle.
type idleConn struct {
	net.Conn
	idle    time.Duration
	msgIdle atomic.Int64 // nanoseconds; 0: no message under way
	last    atomic.Int64 // unix nanoseconds of the last byte either way
}

func newIdleConn(c net.Conn, idle time.Duration) *idleConn {
	ic := &idleConn{Conn: c, idle: idle}
	ic.last.Store(time.Now().UnixNano())
	return ic
}

func (c *idleConn) Read(p []byte) (int, error) {
	for {
		var dl time.Time
		msg := time.Duration(c.msgIdle.Load())
		if msg > 0 {
			dl = time.Now().Add(msg)
		} else {
			dl = time.Unix(0, c.last.Load()).Add(c.idle)
		}
		c.Conn.SetReadDeadline(dl)
		n, err := c.Conn.Read(p)
		if n > 0 {
			c.last.Store(time.Now().UnixNano())
		}
		if n == 0 && err != nil && isTimeout(err) && msg == 0 &&
			time.Since(time.Unix(0, c.last.Load())) < c.idle {
			continue // the other way was busy meanwhile
		}
		return n, err
	}
}

func (c *idleConn) Write(p []byte) (int, error) {
	c.Conn.SetWriteDeadline(time.Now().Add(c.idle))
	n, err := c.Conn.Write(p)
	if n > 0 {
		c.last.Store(time.Now().UnixNano())
	}
	return n, err
}

// inMessage sets the pause allowed between the client's bytes while a
// message is under way; 0 ends the message.
func (c *idleConn) inMessage(d time.Duration) {
	if c != nil {
		c.msgIdle.Store(int64(d))
	}
}
