package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/sluice-egress/sluice/rules"
	"github.com/sluice-egress/sluice/scanner"
)

// ScanFootprinter may be implemented by a Scanner to say how many bytes a
// scan of a body of n bytes holds at most besides its own copy of the body
// (decompressed layers, decoded copies). The gateway reserves them from
// ScanMemory with the body. Without it only the body is counted.
type ScanFootprinter interface {
	ScanFootprint(n int64) int64
}

// errBodyTimeout is what a request body's Read returns once the client
// stopped sending (BodyIdleTimeout) or took too long (BodyReadTimeout).
var errBodyTimeout = errors.New("gateway: request body timed out")

// bodyKey carries a request's *timedBody in its context.
type bodyKey struct{}

// admitBody runs before anything reads r's body: it refuses at once a body
// declared larger than the scan limit (unless oversize bodies are
// forwarded), reserves what will be held of the body in memory (the form
// read for _method and the scanner's copy, never more than will be read)
// from the tenant's share of ScanMemory, and puts the body under the body
// timeouts. It returns the request to go on with and the hold to release
// once the request is done; ok is false when it has answered the client.
func (g *Gateway) admitBody(w http.ResponseWriter, r *http.Request, id rules.Identity, host string, port int) (*http.Request, *scanHold, bool) {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return r, nil, true
	}
	limit, forward := g.scanLimits()
	if g.Scanner != nil && !forward && r.ContentLength > limit {
		inc, _ := g.recordFinding(r.Context(), r, id, host, port, g.evidencePath(r.Context(), id.Tenant, r.URL.Path), scanner.Finding{
			Kind: scanner.KindOversize, Rule: scanner.RuleOversize, Where: "body", Action: scanner.Block,
			Snippet: fmt.Sprintf("declared %d bytes, over %d", r.ContentLength, limit)})
		writeRefusal(w, http.StatusRequestEntityTooLarge, scanner.ReasonOversize, inc,
			fmt.Sprintf("the body is larger than the %d bytes the gateway scans; nothing was forwarded", limit))
		return r, nil, false
	}
	hold := &scanHold{b: g.scanBudget(), tenant: id.Tenant}
	ctx, cancel := context.WithTimeout(r.Context(), g.scanWait())
	ok := hold.grow(ctx, g.bodyReservation(r, limit))
	cancel()
	if !ok {
		g.refuse(w, r, refusal{id: id, status: http.StatusServiceUnavailable, reason: ReasonScanBusy,
			host: host, port: port, msg: "the gateway is scanning as much as it may hold; retry shortly"})
		return r, nil, false
	}
	tb := &timedBody{rc: r.Body, rc2: http.NewResponseController(w), idle: g.bodyIdleTimeout(),
		heldLeft: limit + 1, heldUntil: time.Now().Add(g.bodyReadTimeout()), hold: hold}
	r = r.WithContext(context.WithValue(r.Context(), bodyKey{}, tb))
	r.Body = tb
	return r, hold, true
}

// bodyReservation is what r's body costs in memory while it is checked: the
// scanner's copy of at most limit+1 bytes and what the scanner declares on
// top, and the form read of decide.go.
func (g *Gateway) bodyReservation(r *http.Request, limit int64) int64 {
	n := r.ContentLength
	if n < 0 || n > limit+1 {
		n = limit + 1
	}
	var total int64
	if g.Scanner != nil {
		total = n
		if f, ok := g.Scanner.(ScanFootprinter); ok {
			total += f.ScanFootprint(n)
		}
	}
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct == "application/x-www-form-urlencoded" {
		total += min(n, maxFormPeek+1)
	}
	return total
}

// scanBudget returns the budget of ScanMemory; nil when unbounded.
func (g *Gateway) scanBudget() *scanBudget {
	if g.ScanMemory <= 0 {
		return nil
	}
	g.scanMemOnce.Do(func() { g.budget = newScanBudget(g.ScanMemory) })
	return g.budget
}

// scanLimits returns ScanBodyLimit, or its default, and ForwardOversize.
func (g *Gateway) scanLimits() (limit int64, forwardOversize bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	limit = g.ScanBodyLimit
	if limit <= 0 {
		limit = scanner.DefaultMaxBodyBytes
	}
	return limit, g.ForwardOversize
}

// rawBodyLimit is ScanBodyLimit as set, zero included.
func (g *Gateway) rawBodyLimit() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.ScanBodyLimit
}

// SetScanBodyLimit changes ScanBodyLimit and ForwardOversize while the
// gateway serves (a reload of the scanner's body limit and on_oversize);
// requests under way keep theirs. Each request reserves scan memory by the
// limit it read, and gives back what it reserved.
func (g *Gateway) SetScanBodyLimit(n int64, forwardOversize bool) {
	g.mu.Lock()
	g.ScanBodyLimit, g.ForwardOversize = n, forwardOversize
	g.mu.Unlock()
}

func (g *Gateway) scanWait() time.Duration {
	if g.ScanWait > 0 {
		return g.ScanWait
	}
	return 10 * time.Second
}

// bodyTimedOut reports whether r's body ran out of time.
func bodyTimedOut(r *http.Request) bool {
	tb, _ := r.Context().Value(bodyKey{}).(*timedBody)
	return tb != nil && tb.timedOut.Load()
}

// restartBodyClock gives the held part of r's body a full BodyReadTimeout
// from now: a request held for review waited on the gateway, not on the
// client, and its body is read only afterwards.
func (g *Gateway) restartBodyClock(r *http.Request) {
	if tb, _ := r.Context().Value(bodyKey{}).(*timedBody); tb != nil {
		tb.heldUntil = time.Now().Add(g.bodyReadTimeout())
	}
}

// timedBody puts a request body under the body timeouts: before each read
// the connection's read deadline is set to now plus the idle timeout, or to
// the end of BodyReadTimeout while the bytes that are held for scanning are
// still coming. net/http clears the deadline it set for the headers, so
// without this a body could trickle forever.
type timedBody struct {
	rc        io.ReadCloser
	rc2       *http.ResponseController
	idle      time.Duration
	heldLeft  int64     // bytes still to come under heldUntil
	heldUntil time.Time // when the held part must have arrived
	eof       bool
	timedOut  atomic.Bool
	hold      *scanHold // the request's scan memory, which the scan may grow
}

func (b *timedBody) Read(p []byte) (int, error) {
	if b.eof {
		return b.rc.Read(p)
	}
	dl := time.Now().Add(b.idle)
	if b.heldLeft > 0 && b.heldUntil.Before(dl) {
		dl = b.heldUntil
	}
	// An error means the connection has no deadlines (a test recorder):
	// nothing to bound then.
	b.rc2.SetReadDeadline(dl)
	n, err := b.rc.Read(p)
	b.heldLeft -= int64(n)
	switch {
	case err == io.EOF:
		b.eof = true
		// The connection goes on (keep-alive, the response): no deadline
		// of the body's may cut it.
		b.rc2.SetReadDeadline(time.Time{})
	case err != nil && isTimeout(err):
		b.timedOut.Store(true)
		return n, fmt.Errorf("%w: %w", errBodyTimeout, err)
	}
	return n, err
}

func (b *timedBody) Close() error { return b.rc.Close() }

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// refuseBodyTimeout answers a request whose body did not arrive in time.
func (g *Gateway) refuseBodyTimeout(w http.ResponseWriter, r *http.Request, id rules.Identity, host string, port int) {
	g.refuse(w, r, refusal{id: id, status: http.StatusRequestTimeout, reason: ReasonClientTimeout,
		host: host, port: port, msg: "the request body stopped arriving or took too long; nothing was forwarded"})
}
