package gateway

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"runtime/debug"

	"github.com/sluice-egress/sluice/rules"
	"github.com/sluice-egress/sluice/scanner"
)

// A panic in the gateway's handling of one connection ends that connection,
// never the process: handlers recover here (net/http would recover too, but
// silently and without an answer), the scanner's calls through safeScan, and
// the WebSocket copy goroutines, which nothing else would recover, in
// websocket.go.

// errPanicked marks an error made of a recovered panic.
var errPanicked = errors.New("gateway: internal error")

// panicText is what is logged of a panic value: clipped, since a value built
// from request data could be long.
func panicText(v any) string {
	s := fmt.Sprint(v)
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// safeScan runs the scanner; a panic in it becomes an error wrapping errPanicked.
func (g *Gateway) safeScan(ctx context.Context, req *scanner.Request) (res *scanner.Result, err error) {
	defer func() {
		if v := recover(); v != nil {
			g.logger().Error("scanner panicked", "panic", panicText(v), "stack", string(debug.Stack()))
			res, err = nil, fmt.Errorf("%w: scanner panicked", errPanicked)
		}
	}()
	return g.Scanner.Scan(ctx, req)
}

// recoverRequest is deferred by the handlers: after a panic it answers 502
// (internal-error) when nothing was sent yet, else aborts the connection,
// and records an incident either way.
func (g *Gateway) recoverRequest(w *guardedWriter, r *http.Request, id *rules.Identity) {
	v := recover()
	if v == nil {
		return
	}
	if v == http.ErrAbortHandler {
		panic(v)
	}
	g.logger().Error("panic serving a request", "panic", panicText(v), "stack", string(debug.Stack()),
		logTenant, id.Tenant, logClient, r.RemoteAddr)
	f := refusal{id: *id, status: http.StatusBadGateway, reason: ReasonInternalError,
		msg: "the gateway failed on this request; nothing more of it was forwarded"}
	if w.started {
		g.record(r.Context(), r, f)
		panic(http.ErrAbortHandler) // net/http closes the connection quietly
	}
	g.refuse(w, r, f)
}

// guardedWriter notes whether a response was started, so that a panic is
// answered only where nothing was sent yet.
type guardedWriter struct {
	http.ResponseWriter
	started bool
}

func (w *guardedWriter) WriteHeader(code int) {
	if code >= 200 || code == http.StatusSwitchingProtocols {
		w.started = true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *guardedWriter) Write(p []byte) (int, error) {
	w.started = true
	return w.ResponseWriter.Write(p)
}

func (w *guardedWriter) Flush() {
	w.started = true
	http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *guardedWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	w.started = true
	return http.NewResponseController(w.ResponseWriter).Hijack()
}

// Unwrap lets http.ResponseController reach deadlines and the rest.
func (w *guardedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
