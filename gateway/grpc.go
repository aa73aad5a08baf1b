package gateway

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluice-egress/sluice/rules"
	"github.com/sluice-egress/sluice/scanner"
)

// gRPC carries its messages in the body, each behind a 5-byte prefix (a
// compressed flag and a big-endian length), and a stream may stay open for
// as long as the call lasts. Buffering the whole body for the scan would
// deadlock a streaming call, and the prefixes and compression would hide
// what the messages say. So a gRPC body is scanned message by message as it
// is forwarded: each message whole, decompressed, before any of its bytes
// leave; a refused message ends the stream.

// ReasonGRPCEncoding is sent for a gRPC call whose messages are compressed
// with an encoding the gateway cannot decode, so cannot scan.
const ReasonGRPCEncoding = "grpc-encoding-not-supported"

// ReasonGRPCFrame is sent for a gRPC message prefix the gateway cannot read.
const ReasonGRPCFrame = "grpc-frame-invalid"

// errStreamBlocked ends the forwarding of a request body whose next part
// the scan refused; the refusal itself is written by the stream's done.
var errStreamBlocked = errors.New("gateway: request stream refused by the scan")

// isGRPC reports whether r is a gRPC call (or gRPC-Web, framed the same
// way): its body is a sequence of length-prefixed messages.
func isGRPC(r *http.Request) bool {
	ct := r.Header.Get("Content-Type")
	return ct == "application/grpc" || strings.HasPrefix(ct, "application/grpc+") ||
		strings.HasPrefix(ct, "application/grpc;") || strings.HasPrefix(ct, "application/grpc-web")
}

// scanRequest is scan, except for a gRPC call: its URL and headers are
// scanned before it is forwarded, its messages one by one as they go (the
// returned writer, to be used from then on, is where a refusal is written
// once forwarding stops). done must be deferred.
func (g *Gateway) scanRequest(w http.ResponseWriter, r *http.Request, id rules.Identity, host string, port int) (_ http.ResponseWriter, keep string, ok bool, done func()) {
	if !isGRPC(r) || g.Scanner == nil {
		keep, ok = g.scan(w, r, id, host, port)
		return w, keep, ok, func() {}
	}
	enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Grpc-Encoding")))
	if enc != "" && enc != "identity" && enc != "gzip" {
		g.refuse(w, r, refusal{id: id, status: http.StatusForbidden, reason: ReasonGRPCEncoding, host: host, port: port,
			path: r.URL.Path, msg: "gRPC messages compressed with " + strconv.Quote(enc) + " cannot be scanned; use gzip or none"})
		return w, "", false, func() {}
	}
	body := r.Body
	r.Body = http.NoBody
	keep, ok = g.scan(w, r, id, host, port)
	r.Body = body
	if !ok {
		return w, "", false, func() {}
	}
	if body == nil || body == http.NoBody {
		return w, keep, true, func() {}
	}
	gb := &grpcBody{g: g, r: r, id: id, host: host, port: port, src: body, gzip: enc == "gzip", max: g.wsMaxMessage()}
	if r.ProtoMajor == 2 {
		rc := http.NewResponseController(w)
		gb.deadline = func(t time.Time) { rc.SetReadDeadline(t) }
		gb.timeout = g.HTTP2.withDefaults().BodyTimeout
	}
	r.Body = gb
	gw := &grpcWriter{ResponseWriter: w, b: gb}
	return gw, keep, true, func() {
		if !gb.isBlocked() {
			return
		}
		// ReverseProxy aborts (panics) when the upstream's answer breaks
		// off, as it does when the request stream is cut: that is ours.
		if p := recover(); p != nil && p != http.ErrAbortHandler {
			panic(p)
		}
		gw.refuse()
	}
}

// grpcBody reads a gRPC request body and hands on only messages the scanner
// passed, with their prefixes, as the client framed them.
type grpcBody struct {
	g        *Gateway
	r        *http.Request
	id       rules.Identity
	host     string
	port     int
	src      io.ReadCloser
	gzip     bool
	max      int64
	deadline func(time.Time) // per-message read deadline; nil: none
	timeout  time.Duration

	pending []byte // a scanned message (with its prefix) not yet read out
	n       int    // messages seen
	err     error  // the error after pending

	mu       sync.Mutex
	blocked  bool
	reason   string
	incident string
}

func (b *grpcBody) Read(p []byte) (int, error) {
	for len(b.pending) == 0 {
		if b.err != nil {
			return 0, b.err
		}
		b.pending, b.err = b.next()
	}
	n := copy(p, b.pending)
	b.pending = b.pending[n:]
	return n, nil
}

func (b *grpcBody) Close() error { return b.src.Close() }

func (b *grpcBody) isBlocked() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.blocked
}

// next reads and scans one message; io.EOF at a clean end between messages.
func (b *grpcBody) next() ([]byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(b.src, hdr[:1]); err != nil {
		return nil, err // io.EOF: the client half-closed between messages
	}
	// A message that has begun must arrive whole in time: a trickled one
	// would hold scan memory and the stream.
	if b.deadline != nil {
		b.deadline(time.Now().Add(b.timeout))
		defer b.deadline(time.Time{})
	}
	if _, err := io.ReadFull(b.src, hdr[1:]); err != nil {
		return nil, unexpected(err)
	}
	where := "grpc:message[" + strconv.Itoa(b.n) + "]"
	b.n++
	size := int64(binary.BigEndian.Uint32(hdr[1:]))
	if hdr[0] > 1 {
		return nil, b.refuseFrame(ReasonGRPCFrame)
	}
	if size > b.max {
		return nil, b.oversize(where)
	}
	hold := &scanHold{b: b.g.scanBudget(), tenant: b.id.Tenant}
	ctx, cancel := context.WithTimeout(b.r.Context(), b.g.scanWait())
	ok := hold.grow(ctx, size+1) // the wire size; never zero
	cancel()
	if !ok {
		return nil, b.refuseFrame(ReasonScanBusy)
	}
	defer hold.release()
	msg := make([]byte, 5+size)
	copy(msg, hdr[:])
	if _, err := io.ReadFull(b.src, msg[5:]); err != nil {
		return nil, unexpected(err)
	}
	plain := msg[5:]
	if hdr[0] == 1 {
		if !b.gzip {
			return nil, b.refuseFrame(ReasonGRPCEncoding) // compressed, but with no grpc-encoding
		}
		var tooBig bool
		plain, tooBig = gunzipBounded(plain, b.max)
		if tooBig {
			return nil, b.oversize(where)
		}
		if plain == nil {
			return nil, b.refuseFrame(ReasonGRPCEncoding) // not gzip after all
		}
	}
	if err := b.scan(where, plain); err != nil {
		return nil, err
	}
	return msg, nil
}

// gunzipBounded decompresses at most max bytes: tooBig when there is more
// (a decompression bomb is never inflated past the limit), nil when the
// data is not gzip.
func gunzipBounded(data []byte, max int64) (out []byte, tooBig bool) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, false
	}
	out, err = io.ReadAll(io.LimitReader(zr, max+1))
	if err != nil {
		return nil, false
	}
	if int64(len(out)) > max {
		return nil, true
	}
	return out, false
}

// scan checks one message as the WebSocket path checks one: a redaction
// would rewrite a message the client framed (and may have signed), so it
// blocks.
func (b *grpcBody) scan(where string, data []byte) error {
	g, r, id := b.g, b.r, b.id
	ctx := context.WithoutCancel(r.Context())
	res, err := g.scanMessage(ctx, id, b.host, data)
	if err != nil {
		g.logger().Warn("grpc message scan failed", logTenant, id.Tenant, logHost, b.host, logErr, err)
		return b.refuseFrame(ReasonScanFailed)
	}
	v := g.messageVerdict(ctx, r, id, b.host, b.port, where, res)
	if !v.blocked && v.recErr != nil {
		// An alert nobody can see is no alert: the message does not go on.
		return b.setBlocked(ReasonIncidentStoreUnavailable, "") // the store just failed: nothing more to record
	}
	if !v.blocked {
		return nil
	}
	return b.setBlocked(v.reason, v.incident)
}

func (b *grpcBody) oversize(where string) error {
	return b.block(where, scanner.Finding{Kind: scanner.KindOversize, Rule: scanner.RuleOversize, Where: where,
		Snippet: fmt.Sprintf("message over %d bytes", b.max), Action: scanner.Block}, scanner.ReasonOversize)
}

// block records f and refuses the stream with reason.
func (b *grpcBody) block(where string, f scanner.Finding, reason string) error {
	inc, _ := b.g.recordFinding(context.WithoutCancel(b.r.Context()), b.r, b.id, b.host, b.port, b.g.evidencePath(b.r.Context(), b.id.Tenant, b.r.URL.Path), f)
	return b.setBlocked(reason, inc)
}

// refuseFrame records a refusal of the stream for reason (no finding: the
// gateway could not read the message, or not now).
func (b *grpcBody) refuseFrame(reason string) error {
	inc, _ := b.g.record(context.WithoutCancel(b.r.Context()), b.r, refusal{id: b.id, reason: reason, host: b.host, port: b.port, path: b.r.URL.Path})
	return b.setBlocked(reason, inc)
}

func (b *grpcBody) setBlocked(reason, inc string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.blocked {
		b.blocked, b.reason, b.incident = true, reason, inc
	}
	return errStreamBlocked
}

// grpcWriter passes the upstream's answer on until the scan refuses a
// message; from then on it drops what the forwarding writes, and refuse
// writes the gateway's answer instead.
type grpcWriter struct {
	http.ResponseWriter
	b *grpcBody

	mu     sync.Mutex
	wrote  bool // the upstream's status line went to the client
	closed bool
}

func (w *grpcWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *grpcWriter) WriteHeader(code int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || w.b.isBlocked() {
		return
	}
	if code >= 200 {
		w.wrote = true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *grpcWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || w.b.isBlocked() {
		return len(p), nil
	}
	w.wrote = true
	return w.ResponseWriter.Write(p)
}

func (w *grpcWriter) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || w.b.isBlocked() {
		return
	}
	http.NewResponseController(w.ResponseWriter).Flush()
}

// refuse answers a refused stream: 403 with Sluice-Reason when the client
// has not had the upstream's status yet; else (a streaming call under way)
// trailers that end the call with PERMISSION_DENIED, which gRPC clients
// read as the refusal.
func (w *grpcWriter) refuse() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	w.closed = true
	b := w.b
	b.mu.Lock()
	reason, inc := b.reason, b.incident
	b.mu.Unlock()
	msg := "a gRPC message carried what policy forbids sending to " + b.host + "; it was not forwarded"
	if !w.wrote {
		for k := range w.Header() {
			delete(w.Header(), k)
		}
		writeRefusal(w.ResponseWriter, http.StatusForbidden, reason, inc, msg)
		return
	}
	h := w.Header()
	h.Set(http.TrailerPrefix+"Grpc-Status", "7") // PERMISSION_DENIED
	h.Set(http.TrailerPrefix+"Grpc-Message", "sluice: "+reason+": "+msg)
	h.Set(http.TrailerPrefix+"Sluice-Reason", reason)
	if inc != "" {
		h.Set(http.TrailerPrefix+"Sluice-Incident", inc)
	}
}
