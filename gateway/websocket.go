package gateway

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/sluice-egress/sluice/rules"
	"github.com/sluice-egress/sluice/scanner"
)

// WebSocket close codes the gateway sends (RFC 6455, section 7.4.1).
const (
	wsCloseGoingAway      = 1001 // the client idled, or stopped in the middle of a message
	wsCloseProtocolError  = 1002 // a frame the gateway cannot check (unmasked, RSV bits, bad opcode)
	wsClosePolicy         = 1008 // a message carried what policy forbids
	wsCloseTooBig         = 1009 // a message over the scanning limit
	wsCloseInternalError  = 1011 // the scanner or the gateway failed: nothing unchecked leaves
	wsCloseTryAgainLater  = 1013 // no room in ScanMemory for the message
	wsDefaultMaxMessage   = 1 << 20
	wsMaxControlPayload   = 125 // RFC 6455, section 5.5
	wsClientCloseDeadline = 2 * time.Second
)

// Opcodes (RFC 6455, section 5.2).
const (
	wsOpContinuation = 0x0
	wsOpText         = 0x1
	wsOpBinary       = 0x2
	wsOpClose        = 0x8
	wsOpPing         = 0x9
	wsOpPong         = 0xA
)

// errWebSocketClosed ends the client-to-upstream copy after the gateway closed
// a WebSocket itself; ReverseProxy then closes both connections.
var errWebSocketClosed = errors.New("gateway: websocket closed by the gateway")

// webSocketWriter wraps w for an allowed WebSocket upgrade: ReverseProxy
// hijacks the client connection through it, and the WebSocket is tracked as
// a tunnel (a policy change or the end of its run closes it) and closes when
// idle. With a Scanner it copies, from client to upstream, only messages the
// scanner passed; frames from the upstream pass unscanned, as responses do,
// but scrubbed of inj's secrets (wsscrub.go).
func (g *Gateway) webSocketWriter(w http.ResponseWriter, r *http.Request, id rules.Identity, host string, port int, inj *injection) *wsResponseWriter {
	ww := &wsResponseWriter{ResponseWriter: w, g: g,
		query: rules.Query{Identity: id, Host: host, Port: port, Method: r.Method, Path: r.URL.EscapedPath(),
			WebSocket: true, Stage: rules.StageRequest}}
	if g.Scanner != nil || inj.hasSwaps() {
		ww.s = &wsSession{g: g, r: r, id: id, host: host, port: port, max: g.wsMaxMessage(),
			hold: &scanHold{b: g.scanBudget(), tenant: id.Tenant}, inj: inj}
	}
	return ww
}

// wsMaxMessage is MaxWebSocketMessage, or its default.
func (g *Gateway) wsMaxMessage() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.MaxWebSocketMessage > 0 {
		return g.MaxWebSocketMessage
	}
	return wsDefaultMaxMessage
}

// SetMaxWebSocketMessage changes MaxWebSocketMessage while the gateway
// serves (a reload of the scanner's body limit); WebSockets already open
// keep theirs.
func (g *Gateway) SetMaxWebSocketMessage(n int64) {
	g.mu.Lock()
	g.MaxWebSocketMessage = n
	g.mu.Unlock()
}

// wsResponseWriter hands ReverseProxy a tracked (and, with a session, a
// checked) connection when it hijacks.
type wsResponseWriter struct {
	http.ResponseWriter
	g     *Gateway
	query rules.Query
	s     *wsSession // nil: no Scanner, frames pass as they are
	t     *tunnel
}

// Unwrap lets http.ResponseController reach Flush and the rest.
func (w *wsResponseWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Hijack is called by ReverseProxy after the upstream answered 101.
func (w *wsResponseWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	// ReverseProxy ignores bytes the server already buffered: fold them in.
	ic := newIdleConn(withBuffered(conn, brw.Reader), w.g.tunnelIdleTimeout())
	if w.t = w.g.track(w.query, rules.Allow, ic); w.t == nil {
		return nil, nil, errors.New("gateway: shutting down")
	}
	if w.s == nil {
		return ic, brw, nil
	}
	c := &wsConn{Conn: ic, br: bufio.NewReader(ic), s: w.s}
	if sc := w.s.inj.scrubber(); sc != nil {
		c.scrub = &wsScrub{sc: sc, max: w.s.max}
	}
	w.s.client, w.s.idle = c, ic
	return c, brw, nil
}

// untrack ends the tunnel once ReverseProxy is done with the WebSocket.
func (w *wsResponseWriter) untrack() {
	if w.t != nil {
		w.g.untrack(w.t)
	}
	if w.s != nil {
		w.s.hold.close()
	}
}

// wsSession is the state of one checked WebSocket.
type wsSession struct {
	g    *Gateway
	r    *http.Request // the upgrade request
	id   rules.Identity
	host string
	port int
	max  int64
	hold *scanHold  // the bytes of the message under way, counted in ScanMemory
	inj  *injection // the upgrade's credentials; nil: none

	client *wsConn
	idle   *idleConn // nil in tests that feed frames directly
	n      int       // data messages seen
	op     byte      // opcode of the message being assembled; 0: none
	frames []wsHeld  // its frames, not yet forwarded
	msg    []byte    // its payload, unmasked
	size   int64     // its bytes as received: headers and payloads

	found  []scanner.Finding // what the last check found (it let the data go on)
	splice wsSplice          // the end of the last data message (websocket_splice.go)
}

// wsHeld is one frame of the message under way: its header as received and
// where its payload sits in msg.
type wsHeld struct {
	hdr      []byte
	key      [4]byte
	from, to int
}

// wsConn is the hijacked client connection as ReverseProxy sees it: Read
// yields the client's frames once their message passed the scan; Write
// (upstream to client) passes through, tracking frame boundaries so that
// the gateway's own Close frame never lands inside an upstream frame.
type wsConn struct {
	net.Conn
	br *bufio.Reader
	s  *wsSession

	out [][]byte // checked bytes for the upstream
	err error    // what Read returns once out is drained

	wmu          sync.Mutex
	down         wsFrameTracker
	closePending []byte        // a Close frame to send at the next boundary
	closed       bool          // the gateway sent its Close to the client
	closedCh     chan struct{} // closed with closed
	scrub        *wsScrub      // re-frames the upstream's messages scrubbed; nil: passed through
}

// Read runs on ReverseProxy's copy goroutine, which recovers nothing: a
// panic here closes this WebSocket (1011), never the process.
func (c *wsConn) Read(p []byte) (n int, err error) {
	defer func() {
		if v := recover(); v != nil {
			c.out, c.err = c.s.panicked(v)
			n, err = 0, nil
		}
	}()
	for len(c.out) == 0 {
		if c.s.op == 0 {
			// What was forwarded is no longer held, and no message is
			// being assembled.
			c.s.hold.release()
		}
		if c.err != nil {
			return 0, c.err
		}
		c.out, c.err = c.s.step(c.br)
	}
	n = copy(p, c.out[0])
	if c.out[0] = c.out[0][n:]; len(c.out[0]) == 0 {
		c.out = c.out[1:]
	}
	return n, nil
}

// Write runs on ReverseProxy's other copy goroutine: a panic ends the copy.
func (c *wsConn) Write(p []byte) (n int, err error) {
	defer func() {
		if v := recover(); v != nil {
			c.s.g.logger().Error("panic writing to a websocket", "panic", panicText(v), "stack", string(debug.Stack()))
			n, err = 0, fmt.Errorf("%w: websocket write", errPanicked)
		}
	}()
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.closed {
		return len(p), nil // the client was told goodbye; the rest is dropped
	}
	if c.scrub != nil {
		return c.writeScrubbedLocked(p)
	}
	if c.closePending == nil {
		c.down.consume(p)
		return c.Conn.Write(p)
	}
	for q := p; len(q) > 0; {
		k := c.down.next(q)
		if _, err := c.Conn.Write(q[:k]); err != nil {
			return 0, err
		}
		q = q[k:]
		if c.down.atBoundary() {
			c.sendCloseLocked()
			break
		}
	}
	return len(p), nil
}

func (c *wsConn) sendCloseLocked() {
	c.Conn.SetWriteDeadline(time.Now().Add(wsClientCloseDeadline))
	c.Conn.Write(c.closePending)
	c.closed = true
	close(c.closedCh)
}

// closeClient sends a Close frame to the client at the next upstream frame
// boundary and waits, bounded, until it went out.
func (c *wsConn) closeClient(code int, reason string) {
	c.wmu.Lock()
	if c.closePending != nil {
		c.wmu.Unlock()
		return
	}
	c.closePending = wsCloseFrame(code, reason, false)
	c.closedCh = make(chan struct{})
	if c.down.atBoundary() {
		c.sendCloseLocked()
	}
	ch := c.closedCh
	c.wmu.Unlock()
	select {
	case <-ch:
	case <-time.After(wsClientCloseDeadline):
	}
}

// step reads one frame from the client and returns the bytes that may now go
// upstream (nil while a message is being assembled) or the error that ends
// the copy. After a refusal it returns the Close frame for the upstream and
// errWebSocketClosed.
func (s *wsSession) step(br *bufio.Reader) ([][]byte, error) {
	hdr, f, err := readWSHeader(br)
	if err != nil {
		return s.readFailed(err)
	}
	control := f.op&0x8 != 0
	switch {
	case !f.masked:
		return s.protocolError("client frame not masked")
	case f.rsv != 0:
		// No extension was negotiated (Sec-WebSocket-Extensions is removed
		// from the upgrade): a compressed frame could not be scanned.
		return s.protocolError("reserved bits set")
	case control && (f.op > wsOpPong || !f.fin || f.length > wsMaxControlPayload):
		return s.protocolError("bad control frame")
	case !control && f.op > wsOpBinary:
		return s.protocolError("unknown opcode")
	case f.op == wsOpContinuation && s.op == 0, (f.op == wsOpText || f.op == wsOpBinary) && s.op != 0:
		return s.protocolError("bad fragmentation")
	}
	if !control && (f.length > uint64(s.max) || s.size+int64(len(hdr))+int64(f.length) > s.max) {
		return s.oversize()
	}
	// From the first header on, the rest of the message must keep coming.
	s.idle.inMessage(s.g.bodyIdleTimeout())
	if control {
		return s.control(br, hdr, f)
	}
	if s.op == 0 {
		s.op = f.op
	}
	from := len(s.msg)
	if err := s.readPayload(br, int(f.length)); err != nil {
		return s.readFailed(err)
	}
	s.frames = append(s.frames, wsHeld{hdr: hdr, key: f.key, from: from, to: len(s.msg)})
	s.size += int64(len(hdr)) + int64(f.length)
	mask(s.msg[from:], f.key)
	if !f.fin {
		return nil, nil
	}
	s.idle.inMessage(0)
	where := "websocket:message[" + strconv.Itoa(s.n) + "]"
	s.n++
	// The scanner takes a copy of its own.
	if !s.grow(int64(len(s.msg)) + 1) {
		return s.busy()
	}
	if out, err := s.check(where, s.msg); out != nil || err != nil {
		return out, err
	}
	if out, err := s.checkSplice(s.n-1, s.msg, s.found); out != nil || err != nil {
		return out, err
	}
	// Forward the frames as the client framed them: masked again in place.
	var out [][]byte
	for _, fr := range s.frames {
		mask(s.msg[fr.from:fr.to], fr.key)
		out = append(out, fr.hdr, s.msg[fr.from:fr.to])
	}
	s.reset()
	return out, nil
}

// control reads and checks a control frame, which may come between the
// fragments of a message; it is forwarded at once.
func (s *wsSession) control(br *bufio.Reader, hdr []byte, f wsHeader) ([][]byte, error) {
	raw := make([]byte, f.length) // at most wsMaxControlPayload
	if _, err := io.ReadFull(br, raw); err != nil {
		return s.readFailed(err)
	}
	if s.op == 0 {
		s.idle.inMessage(0)
	}
	payload := bytes.Clone(raw)
	mask(payload, f.key)
	where := "websocket:ping"
	switch f.op {
	case wsOpPong:
		where = "websocket:pong"
	case wsOpClose:
		where = "websocket:close"
	}
	if f.op == wsOpClose && len(payload) >= 2 {
		payload = payload[2:] // the status code is no data
	}
	if len(payload) > 0 {
		if out, err := s.check(where, payload); out != nil || err != nil {
			return out, err
		}
	}
	return [][]byte{hdr, raw}, nil
}

// wsReadChunk is how much of a payload is read (and counted) at a time: a
// header that claims a large payload costs nothing until its bytes come.
const wsReadChunk = 32 << 10

// readPayload appends n payload bytes to msg as they arrive, counting the
// memory it takes in ScanMemory.
func (s *wsSession) readPayload(br *bufio.Reader, n int) error {
	for n > 0 {
		k := min(n, wsReadChunk)
		if len(s.msg)+k > cap(s.msg) {
			c := min(max(2*cap(s.msg), len(s.msg)+k), int(s.max))
			if !s.grow(int64(c - cap(s.msg))) {
				return errWSBusy
			}
			s.msg = append(make([]byte, 0, c), s.msg...)
		}
		if _, err := io.ReadFull(br, s.msg[len(s.msg):len(s.msg)+k]); err != nil {
			return unexpected(err)
		}
		s.msg = s.msg[:len(s.msg)+k]
		n -= k
	}
	return nil
}

// grow takes n more bytes of ScanMemory for the message, waiting at most
// ScanWait.
func (s *wsSession) grow(n int64) bool {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(s.r.Context()), s.g.scanWait())
	defer cancel()
	return s.hold.grow(ctx, n)
}

// errWSBusy: ScanMemory had no room for a message within ScanWait.
var errWSBusy = errors.New("gateway: no scan memory for the websocket message")

func mask(p []byte, key [4]byte) {
	for i := range p {
		p[i] ^= key[i%4]
	}
}

func (s *wsSession) reset() {
	s.op, s.msg, s.frames, s.size = 0, nil, nil, 0
}

// readFailed ends the session after a read error: a client that stopped
// sending in the middle of a message (or idled past TunnelIdleTimeout) is
// told why; any other error ends the copy as it is.
func (s *wsSession) readFailed(err error) ([][]byte, error) {
	switch {
	case errors.Is(err, errWSBusy):
		return s.busy()
	case !isTimeout(err):
		return nil, err
	case s.op != 0 || s.size > 0:
		s.record(ReasonClientTimeout)
		return s.close(wsCloseGoingAway, ReasonClientTimeout)
	}
	return s.close(wsCloseGoingAway, "idle")
}

// busy closes a WebSocket whose message found no room in ScanMemory.
func (s *wsSession) busy() ([][]byte, error) {
	s.record(ReasonScanBusy)
	return s.close(wsCloseTryAgainLater, ReasonScanBusy)
}

// panicked closes the WebSocket after a panic in its handling and says why.
func (s *wsSession) panicked(v any) ([][]byte, error) {
	s.g.logger().Error("panic in a websocket", "panic", panicText(v), "stack", string(debug.Stack()),
		logTenant, s.id.Tenant, logHost, s.host)
	s.record(ReasonInternalError)
	return s.close(wsCloseInternalError, ReasonInternalError)
}

func (s *wsSession) record(reason string) {
	s.g.record(context.WithoutCancel(s.r.Context()), s.r, refusal{id: s.id, reason: reason, host: s.host, port: s.port, path: s.r.URL.Path})
}

// oversize refuses a message over the limit: it is never forwarded in part.
func (s *wsSession) oversize() ([][]byte, error) {
	r := s.r
	s.g.recordFinding(context.WithoutCancel(r.Context()), r, s.id, s.host, s.port, s.g.evidencePath(r.Context(), s.id.Tenant, r.URL.Path), scanner.Finding{
		Kind: scanner.KindOversize, Rule: scanner.RuleOversize, Where: "websocket:message[" + strconv.Itoa(s.n) + "]",
		Snippet: fmt.Sprintf("message over %d bytes", s.max), Action: scanner.Block,
	})
	return s.close(wsCloseTooBig, scanner.ReasonOversize)
}

// protocolError closes a WebSocket whose frames the gateway cannot check.
func (s *wsSession) protocolError(why string) ([][]byte, error) {
	s.g.logger().Info("websocket protocol error", logTenant, s.id.Tenant, logHost, s.host, logReason, why)
	return s.close(wsCloseProtocolError, why)
}

// close tells the client (at once) and the upstream (by the returned frame)
// that the gateway ends the WebSocket; nothing the client sent after the
// refused message is forwarded.
func (s *wsSession) close(code int, reason string) ([][]byte, error) {
	s.reset()
	s.idle.inMessage(0)
	if s.client != nil {
		s.client.closeClient(code, reason)
	}
	return [][]byte{wsCloseFrame(code, reason, true)}, errWebSocketClosed
}
