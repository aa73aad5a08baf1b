package gateway

import (
	"context"
	"crypto/tls"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
)

// HTTP2 bounds what a client speaking HTTP/2 inside an inspected tunnel may
// make the gateway hold. Every stream is one request, served by the same
// handler as an HTTP/1.1 request (identified, decided, scanned, injected);
// these limits are about the connection that carries the streams. The zero
// value is a safe default for each field.
type HTTP2 struct {
	// Disable offers only http/1.1 by ALPN: every client speaks HTTP/1.1.
	Disable bool
	// MaxConcurrentStreams is how many streams one client connection may
	// have open (SETTINGS_MAX_CONCURRENT_STREAMS); one more is refused with
	// RST_STREAM. Zero: 100.
	MaxConcurrentStreams uint32
	// MaxHeaderBytes bounds a stream's header list, names and values
	// decoded (SETTINGS_MAX_HEADER_LIST_SIZE): a larger one is answered
	// 431, and a client that keeps sending CONTINUATION frames past it
	// loses the connection. Zero: 64 KiB.
	MaxHeaderBytes int
	// MaxDecoderHeaderTableSize is the HPACK table the client may make the
	// gateway keep per connection (SETTINGS_HEADER_TABLE_SIZE). Zero: 4 KiB.
	MaxDecoderHeaderTableSize uint32
	// MaxReadFrameSize is the largest frame the gateway reads
	// (SETTINGS_MAX_FRAME_SIZE). Zero: 16 KiB, the protocol's minimum.
	MaxReadFrameSize uint32
	// BodyTimeout is how long one gRPC message may take to arrive once it
	// has begun: it is held for the scan, so a trickled one would hold its
	// share of scan memory and the stream indefinitely (a stream may idle
	// between messages). Other bodies are timed by Limits, as over
	// HTTP/1.1. Zero: 60s.
	BodyTimeout time.Duration
	// MaxResets is how many streams a client connection may cancel
	// (RST_STREAM before its answer is complete) in a burst; it regains
	// one every ResetWindow/MaxResets. Past it the connection is closed
	// (HTTP/2 rapid reset, CVE-2023-44487: each cancelled stream costs the
	// gateway and the upstream a request, the client almost nothing).
	// Zero: twice MaxConcurrentStreams.
	MaxResets int
	// ResetWindow: see MaxResets. Zero: 10s.
	ResetWindow time.Duration
}

// Reason sent when a client connection is closed for cancelling streams
// faster than its budget allows.
const ReasonHTTP2RapidReset = "http2-rapid-reset"

func (c HTTP2) withDefaults() HTTP2 {
	if c.MaxConcurrentStreams == 0 {
		c.MaxConcurrentStreams = 100
	}
	if c.MaxHeaderBytes <= 0 {
		c.MaxHeaderBytes = 64 << 10
	}
	if c.MaxDecoderHeaderTableSize == 0 {
		c.MaxDecoderHeaderTableSize = 4 << 10
	}
	if c.MaxReadFrameSize == 0 {
		c.MaxReadFrameSize = 16 << 10
	}
	if c.BodyTimeout <= 0 {
		c.BodyTimeout = 60 * time.Second
	}
	if c.MaxResets <= 0 {
		c.MaxResets = 2 * int(c.MaxConcurrentStreams)
	}
	if c.ResetWindow <= 0 {
		c.ResetWindow = 10 * time.Second
	}
	return c
}

// innerProtos is the ALPN list of an inspected tunnel: h2 first, as any
// server offers it, unless HTTP/2 is disabled.
func (g *Gateway) innerProtos() []string {
	if g.HTTP2.Disable {
		return []string{"http/1.1"}
	}
	return []string{"h2", "http/1.1"}
}

// upstreamHTTP2 configures HTTP/2 towards upstreams: a pooled connection
// silent for a while is pinged, so that a dead one is dropped before a
// request is sent on it, and a live one stays warm.
func upstreamHTTP2() *http.HTTP2Config {
	return &http.HTTP2Config{SendPingTimeout: 30 * time.Second, PingTimeout: 15 * time.Second}
}

// serveH2 serves the streams of an inspected tunnel whose client chose h2,
// until the connection ends. h is the tunnel's per-request handler; t is the
// tracked tunnel, whose close (run end, policy change, Shutdown's deadline)
// ends the connection, and whose server's Shutdown sends GOAWAY.
func (g *Gateway) serveH2(ctx context.Context, conn *tls.Conn, t *tunnel, h *innerHandler) {
	lim := g.HTTP2.withDefaults()
	srv := &http.Server{
		IdleTimeout:    g.idleTimeout(),
		MaxHeaderBytes: lim.MaxHeaderBytes,
		ErrorLog:       discardLog,
		HTTP2: &http.HTTP2Config{
			MaxConcurrentStreams:      int(lim.MaxConcurrentStreams),
			MaxDecoderHeaderTableSize: int(lim.MaxDecoderHeaderTableSize),
			MaxReadFrameSize:          int(lim.MaxReadFrameSize),
			// A client that stops reading its answers must not hold the
			// handlers (and upstream streams) writing to it.
			WriteByteTimeout: g.idleTimeout(),
			// A silent peer is probed, and dropped if it does not answer.
			SendPingTimeout: g.idleTimeout() / 2,
		},
	}
	h2s := &http2.Server{}
	if err := http2.ConfigureServer(srv, h2s); err != nil {
		g.logger().Error("http2 server", logErr, err)
		return
	}
	if !t.setServer(srv) { // Shutdown: GOAWAY, then streams finish
		return // Shutdown began during the handshake; nothing was served
	}
	sh := &h2Handler{g: g, inner: h, lim: lim, resets: newResetBudget(lim.MaxResets, lim.ResetWindow),
		closeConn: sync.OnceFunc(func() { conn.Close() })}
	//lint:ignore SA1019 ServeConn on a connection whose TLS (and ALPN) the gateway already terminated is the way to serve one HTTP/2 connection.
	h2s.ServeConn(&servedConn{Conn: conn, served: &t.served}, &http2.ServeConnOpts{Context: ctx, BaseConfig: srv, Handler: sh})
}

// servedConn marks its tunnel served once the client's first bytes (its
// preface) arrive: from then on Shutdown sends GOAWAY and lets the streams
// finish, where a connection that sent nothing is closed at once. The
// embedded *tls.Conn keeps ConnectionState, which the HTTP/2 server reads.
type servedConn struct {
	*tls.Conn
	served *atomic.Bool
}

func (c *servedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && !c.served.Load() {
		c.served.Store(true)
	}
	return n, err
}

// h2Handler serves one stream: the tunnel's handler, plus what HTTP/2 adds.
type h2Handler struct {
	g         *Gateway
	inner     *innerHandler
	lim       HTTP2
	resets    *resetBudget
	closeConn func()
}

func (h *h2Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Context().Err() != nil {
		// Reset before its handler ran: nothing is decided or sent.
		h.cancelled(r)
		return
	}
	// Request trailers arrive after the body was scanned: like HTTP/1.1's,
	// they are dropped, never forwarded unchecked.
	r.Trailer = nil
	// Deferred: a stream the client reset ends its handler with
	// http.ErrAbortHandler, and is counted all the same.
	defer func() {
		if r.Context().Err() != nil {
			h.cancelled(r)
		}
	}()
	// A body is timed as over HTTP/1.1 (body.go: Limits.BodyIdleTimeout and
	// BodyReadTimeout, through the stream's read deadline); a gRPC body
	// message by message (grpc.go, BodyTimeout).
	h.inner.ServeHTTP(&h2Writer{ResponseWriter: w}, r)
}

// cancelled counts a stream the client reset before its answer was done,
// and closes the connection past the budget.
func (h *h2Handler) cancelled(r *http.Request) {
	if h.resets.take() || !h.resets.trip() {
		return
	}
	h.g.record(context.WithoutCancel(r.Context()), r, refusal{id: h.inner.id, reason: ReasonHTTP2RapidReset,
		host: h.inner.host, port: h.inner.port})
	h.closeConn()
}

// h2Writer drops the Connection header the HTTP/1.1 refusal sets: in
// HTTP/2, Connection: close makes the server send GOAWAY, which would end
// the client's other streams with the refused one.
type h2Writer struct{ http.ResponseWriter }

func (w *h2Writer) WriteHeader(code int) {
	w.Header().Del("Connection")
	w.ResponseWriter.WriteHeader(code)
}

func (w *h2Writer) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// resetBudget is a token bucket of stream cancellations for one connection.
type resetBudget struct {
	mu     sync.Mutex
	tokens float64
	max    float64
	rate   float64 // tokens per second
	last   time.Time
	broke  bool
}

// trip reports true once: the first time the budget is found spent.
func (b *resetBudget) trip() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	first := !b.broke
	b.broke = true
	return first
}

func newResetBudget(max int, window time.Duration) *resetBudget {
	return &resetBudget{tokens: float64(max), max: float64(max),
		rate: float64(max) / window.Seconds(), last: time.Now()}
}

// take spends one token; false when none is left.
func (b *resetBudget) take() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	b.tokens = min(b.max, b.tokens+now.Sub(b.last).Seconds()*b.rate)
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}
