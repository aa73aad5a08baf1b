package gateway

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/sluice-egress/sluice/incident"
	"github.com/sluice-egress/sluice/rules"
	"github.com/sluice-egress/sluice/scanner"
)

// WebSocket close codes the gateway sends (RFC 6455, section 7.4.1).
const (
	wsCloseProtocolError  = 1002 // a frame the gateway cannot check (unmasked, RSV bits, bad opcode)
	wsClosePolicy         = 1008 // a message carried what policy forbids
	wsCloseTooBig         = 1009 // a message over the scanning limit
	wsCloseInternalError  = 1011 // the scanner failed: nothing unchecked leaves
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

// webSocketWriter wraps w for an allowed WebSocket upgrade (a Scanner set, or
// inj's secrets to scrub): ReverseProxy hijacks the client connection through
// it and copies upstream only messages the scanner passed. Upstream frames
// pass unscanned, as responses do, but scrubbed of inj's secrets (wsscrub.go).
func (g *Gateway) webSocketWriter(w http.ResponseWriter, r *http.Request, id rules.Identity, host string, port int, inj *injection) http.ResponseWriter {
	return &wsResponseWriter{ResponseWriter: w, s: &wsSession{g: g, r: r, id: id, host: host, port: port, max: g.wsMaxMessage(), inj: inj}}
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

// wsResponseWriter hands ReverseProxy a checked connection when it hijacks.
type wsResponseWriter struct {
	http.ResponseWriter
	s *wsSession
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
	c := &wsConn{Conn: conn, br: bufio.NewReader(withBuffered(conn, brw.Reader)), s: w.s}
	if sc := w.s.inj.scrubber(); sc != nil {
		c.scrub = &wsScrub{sc: sc, max: w.s.max}
	}
	w.s.client = c
	return c, brw, nil
}

// wsSession is the state of one checked WebSocket.
type wsSession struct {
	g    *Gateway
	r    *http.Request // the upgrade request
	id   rules.Identity
	host string
	port int
	max  int64
	inj  *injection // the upgrade's credentials; nil: none

	client *wsConn
	n      int    // data messages seen
	op     byte   // opcode of the message being assembled; 0: none
	held   []byte // its frames as received (masked), not yet forwarded
	msg    []byte // its payload, unmasked
}

// wsConn is the hijacked client connection as ReverseProxy sees it: Read
// yields the client's frames once their message passed the scan; Write
// (upstream to client) passes through, tracking frame boundaries so that
// the gateway's own Close frame never lands inside an upstream frame.
type wsConn struct {
	net.Conn
	br *bufio.Reader
	s  *wsSession

	out []byte // checked bytes for the upstream
	err error  // what Read returns once out is drained

	wmu          sync.Mutex
	down         wsFrameTracker
	closePending []byte        // a Close frame to send at the next boundary
	closed       bool          // the gateway sent its Close to the client
	closedCh     chan struct{} // closed with closed
	scrub        *wsScrub      // re-frames the upstream's messages scrubbed; nil: passed through
}

func (c *wsConn) Read(p []byte) (int, error) {
	for len(c.out) == 0 {
		if c.err != nil {
			return 0, c.err
		}
		c.out, c.err = c.s.step(c.br)
	}
	n := copy(p, c.out)
	c.out = c.out[n:]
	return n, nil
}

func (c *wsConn) Write(p []byte) (int, error) {
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
func (s *wsSession) step(br *bufio.Reader) ([]byte, error) {
	hdr, f, err := readWSHeader(br)
	if err != nil {
		return nil, err
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
	if !control && (f.length > uint64(s.max) || int64(len(s.held)+len(hdr))+int64(f.length) > s.max) {
		return s.oversize()
	}
	frame := make([]byte, len(hdr)+int(f.length))
	copy(frame, hdr)
	if _, err := io.ReadFull(br, frame[len(hdr):]); err != nil {
		return nil, err
	}
	payload := bytes.Clone(frame[len(hdr):])
	for i := range payload {
		payload[i] ^= f.key[i%4]
	}
	if control {
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
		return frame, nil
	}
	if s.op == 0 {
		s.op = f.op
	}
	s.held = append(s.held, frame...)
	s.msg = append(s.msg, payload...)
	if !f.fin {
		return nil, nil
	}
	where := "websocket:message[" + strconv.Itoa(s.n) + "]"
	s.n++
	msg, held := s.msg, s.held
	s.op, s.msg, s.held = 0, nil, nil
	if out, err := s.check(where, msg); out != nil || err != nil {
		return out, err
	}
	return held, nil
}

// check scans one message. It returns nil, nil when the message may go on,
// else what step returns to end the session.
func (s *wsSession) check(where string, data []byte) ([]byte, error) {
	g, r, id := s.g, s.r, s.id
	if g.Scanner == nil {
		return nil, nil // opened for the scrub of the upstream's side only
	}
	ctx := context.WithoutCancel(r.Context())
	req := &scanner.Request{
		Tenant: id.Tenant, Host: s.host, Body: bytes.NewReader(data),
		Allowed: func(h string) bool {
			n, err := rules.NormalizeHost(h)
			if err != nil {
				return false
			}
			return g.Policy.Decide(rules.Query{Identity: id, Host: n, Port: 443, Stage: rules.StageConnect}).Action != rules.Deny
		},
		// PhantomAllowed stays nil: phantoms are swapped in headers and
		// queries only, so a phantom inside a message is always a misuse.
	}
	start := time.Now()
	res, err := g.Scanner.Scan(ctx, req)
	if g.OnScan != nil {
		g.OnScan(time.Since(start))
	}
	if err != nil {
		g.logger().Warn("websocket scan failed", logTenant, id.Tenant, logHost, s.host, logErr, err)
		g.record(ctx, r, refusal{id: id, reason: ReasonScanFailed, host: s.host, port: s.port, path: r.URL.Path})
		return s.close(wsCloseInternalError, ReasonScanFailed)
	}
	// Redaction would rewrite a message the client framed and may have
	// signed or counted: on a WebSocket, redact blocks.
	blocked := res.Verdict == scanner.Block || res.Verdict == scanner.Redact
	reason := res.Reason
	var recErr error
	for _, f := range res.Findings {
		if f.Action == scanner.Redact {
			f.Action = scanner.Block
		}
		if reason == "" && f.Action == scanner.Block {
			reason = scanner.KindReason(f.Kind)
		}
		if f.Where != "" && f.Where != "body" {
			f.Where = where + "/" + f.Where
		} else {
			f.Where = where
		}
		if _, err := g.recordFinding(ctx, r, id, s.host, s.port, incident.RedactPath(r.URL.Path), f); err != nil {
			recErr = err
		}
	}
	if !blocked && recErr != nil {
		// An alert that could not be recorded: the message does not go on
		// unrecorded.
		return s.close(wsCloseInternalError, ReasonIncidentStoreUnavailable)
	}
	if !blocked {
		return nil, nil
	}
	if reason == "" {
		reason = scanner.ReasonSecret
	}
	return s.close(wsClosePolicy, reason)
}

// oversize refuses a message over the limit: it is never forwarded in part.
func (s *wsSession) oversize() ([]byte, error) {
	r := s.r
	s.g.recordFinding(context.WithoutCancel(r.Context()), r, s.id, s.host, s.port, incident.RedactPath(r.URL.Path), scanner.Finding{
		Kind: scanner.KindOversize, Rule: scanner.RuleOversize, Where: "websocket:message[" + strconv.Itoa(s.n) + "]",
		Snippet: fmt.Sprintf("message over %d bytes", s.max), Action: scanner.Block,
	})
	return s.close(wsCloseTooBig, scanner.ReasonOversize)
}

// protocolError closes a WebSocket whose frames the gateway cannot check.
func (s *wsSession) protocolError(why string) ([]byte, error) {
	s.g.logger().Info("websocket protocol error", logTenant, s.id.Tenant, logHost, s.host, logReason, why)
	return s.close(wsCloseProtocolError, why)
}

// close tells the client (at once) and the upstream (by the returned frame)
// that the gateway ends the WebSocket; nothing the client sent after the
// refused message is forwarded.
func (s *wsSession) close(code int, reason string) ([]byte, error) {
	s.op, s.msg, s.held = 0, nil, nil
	if s.client != nil {
		s.client.closeClient(code, reason)
	}
	return wsCloseFrame(code, reason, true), errWebSocketClosed
}

// wsCloseFrame builds a Close frame with code and reason (cut to fit a
// control frame), masked when it goes to a server.
func wsCloseFrame(code int, reason string, masked bool) []byte {
	payload := binary.BigEndian.AppendUint16(nil, uint16(code))
	if len(reason) > wsMaxControlPayload-2 {
		reason = reason[:wsMaxControlPayload-2]
	}
	payload = append(payload, reason...)
	frame := []byte{0x80 | wsOpClose, byte(len(payload))}
	if masked {
		var key [4]byte
		rand.Read(key[:])
		frame[1] |= 0x80
		frame = append(frame, key[:]...)
		for i := range payload {
			payload[i] ^= key[i%4]
		}
	}
	return append(frame, payload...)
}

// wsHeader is a parsed frame header.
type wsHeader struct {
	fin    bool
	rsv    byte
	op     byte
	masked bool
	key    [4]byte
	length uint64
}

// readWSHeader reads a frame header and returns its bytes as received.
func readWSHeader(br *bufio.Reader) ([]byte, wsHeader, error) {
	var h wsHeader
	hdr := make([]byte, 2, 14)
	if _, err := io.ReadFull(br, hdr); err != nil {
		return nil, h, err
	}
	h.fin = hdr[0]&0x80 != 0
	h.rsv = hdr[0] & 0x70
	h.op = hdr[0] & 0x0f
	h.masked = hdr[1]&0x80 != 0
	ext := 0
	switch hdr[1] & 0x7f {
	case 126:
		ext = 2
	case 127:
		ext = 8
	}
	if h.masked {
		ext += 4
	}
	hdr = hdr[:2+ext]
	if _, err := io.ReadFull(br, hdr[2:]); err != nil {
		return nil, h, unexpected(err)
	}
	h.length, h.key = wsLengthAndKey(hdr)
	return hdr, h, nil
}

// wsLengthAndKey decodes the payload length and masking key of a complete header.
func wsLengthAndKey(hdr []byte) (uint64, [4]byte) {
	var key [4]byte
	n := uint64(hdr[1] & 0x7f)
	rest := hdr[2:]
	switch n {
	case 126:
		n, rest = uint64(binary.BigEndian.Uint16(rest)), rest[2:]
	case 127:
		n, rest = binary.BigEndian.Uint64(rest), rest[8:]
	}
	if hdr[1]&0x80 != 0 {
		copy(key[:], rest)
	}
	return n, key
}

func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// wsFrameTracker follows frame boundaries in a byte stream without keeping
// payloads: enough to know where a frame of the gateway's own may go.
type wsFrameTracker struct {
	hdr  [14]byte
	n    int    // header bytes seen of the frame in progress
	need int    // header length, once known (0: not yet)
	left uint64 // payload bytes left
}

func (t *wsFrameTracker) atBoundary() bool { return t.n == 0 && t.left == 0 }

// consume feeds all of p.
func (t *wsFrameTracker) consume(p []byte) {
	for len(p) > 0 {
		p = p[t.next(p):]
	}
}

// next feeds p up to the end of the frame in progress and returns how many
// bytes it took.
func (t *wsFrameTracker) next(p []byte) int {
	i := 0
	for t.left == 0 && i < len(p) {
		// In a header (or at a boundary, starting one).
		t.hdr[t.n] = p[i]
		t.n++
		i++
		if t.n == 2 {
			t.need = 2
			switch t.hdr[1] & 0x7f {
			case 126:
				t.need += 2
			case 127:
				t.need += 8
			}
			if t.hdr[1]&0x80 != 0 {
				t.need += 4
			}
		}
		if t.n >= 2 && t.n == t.need {
			t.left, _ = wsLengthAndKey(t.hdr[:t.n])
			t.n, t.need = 0, 0
			if t.left == 0 {
				return i // an empty frame ends here
			}
		}
	}
	k := uint64(len(p) - i)
	if k > t.left {
		k = t.left
	}
	t.left -= k
	return i + int(k)
}
