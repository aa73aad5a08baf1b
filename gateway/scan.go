package gateway

import (
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"strconv"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/sluice-egress/sluice/rules"
	"github.com/sluice-egress/sluice/scanner"
)

// Scanner inspects a request before it is forwarded. *scanner.Scanner
// implements it. An error means the request was not fully checked: the
// gateway refuses it (fail closed).
type Scanner interface {
	Scan(ctx context.Context, req *scanner.Request) (*scanner.Result, error)
}

var _ Scanner = (*scanner.Scanner)(nil)

// ReasonScanFailed is sent when the scanner failed or ran out of time;
// ReasonScanBusy when the bytes already held for scanning left no room.
const (
	ReasonScanFailed = "scan-failed"
	ReasonScanBusy   = "scan-busy"
)

// scan checks what a request carries before it is forwarded: it emits one
// event per finding, refuses a blocked request (403 with the reason and the
// incident id) and applies redactions to r. It reports false when it has
// answered the client itself. Without a Scanner nothing is scanned.
func (g *Gateway) scan(w http.ResponseWriter, r *http.Request, id rules.Identity, host string, port int) (ok bool, done func()) {
	nop := func() {}
	if g.Scanner == nil {
		return true, nop
	}
	// A WebSocket key is a random 16-byte nonce: it looks like a token to
	// every entropy rule. A well-formed one is left out of the scan (it can
	// carry no more than 16 bytes); anything else in that header is scanned.
	hdr, wsKey := withoutWebSocketKey(r.Header)
	req := &scanner.Request{
		Tenant: id.Tenant, Host: host, URL: r.URL, Header: hdr,
		// A link leads outside when the client could not open that host.
		Allowed: func(h string) bool {
			n, err := rules.NormalizeHost(h)
			if err != nil {
				return false
			}
			return g.Policy.Decide(rules.Query{Identity: id, Host: n, Port: 443, Stage: rules.StageConnect}).Action != rules.Deny
		},
	}
	if r.Body != nil && r.Body != http.NoBody {
		req.Body = r.Body
	}
	allowed, err := g.phantomAllowed(r, id, host, port)
	if err != nil {
		// The sandbox holds a real secret and the alert saying so could not
		// be recorded: nothing goes on unrecorded.
		g.unrecorded(w, id, host)
		return false, nop
	}
	req.PhantomAllowed = allowed
	release, ok := g.reserveScanMemory(r)
	if !ok {
		g.refuse(w, r, refusal{id: id, status: http.StatusServiceUnavailable, reason: ReasonScanBusy,
			host: host, port: port, msg: "the gateway is scanning as much as it may hold; retry shortly"})
		return false, nop
	}
	// The share is held until the request has been forwarded (the caller's
	// done), since the scanned bytes stay in memory until then.
	held := true
	defer func() {
		if held {
			release()
		}
	}()
	start := time.Now()
	res, err := g.Scanner.Scan(r.Context(), req)
	if g.OnScan != nil {
		g.OnScan(time.Since(start))
	}
	if err != nil {
		g.logger().Warn("scan failed", logTenant, id.Tenant, logHost, host, logErr, err)
		g.refuse(w, r, refusal{id: id, status: http.StatusServiceUnavailable, reason: ReasonScanFailed,
			host: host, port: port, path: "", msg: "the request could not be checked; nothing was forwarded"})
		return false, nop
	}
	incidentID := ""
	var recErr error
	for _, f := range res.Findings {
		inc, err := g.recordFinding(r.Context(), r, id, host, port, res.Path, f)
		if incidentID == "" && f.Action == res.Verdict {
			incidentID = inc
		}
		if err != nil {
			recErr = err
		}
	}
	if recErr != nil && res.Verdict != scanner.Block {
		if c, ok := r.Body.(io.Closer); ok && r.Body != nil {
			c.Close()
		}
		g.unrecorded(w, id, host)
		return false, nop
	}
	if res.Verdict == scanner.Block {
		if c, ok := r.Body.(io.Closer); ok && r.Body != nil {
			c.Close()
		}
		g.refuseBlocked(w, r, id, host, port, res, incidentID)
		return false, nop
	}
	if res.URL != nil {
		r.URL = res.URL
	}
	if res.Header != nil {
		r.Header = res.Header
		if wsKey != "" {
			r.Header.Set("Sec-WebSocket-Key", wsKey)
		}
	}
	if req.Body != nil {
		r.Body = &scannedBody{Reader: res.Body, orig: r.Body}
		r.ContentLength = res.BodyLen
		if res.BodyLen >= 0 {
			r.Header.Set("Content-Length", strconv.FormatInt(res.BodyLen, 10))
			r.TransferEncoding = nil
		}
	}
	held = false
	return true, release
}

// unrecorded refuses a request that would have been forwarded with a
// finding the store could not take: an alert nobody can see is no alert.
// The refusal itself is not recorded either (the store just failed); the
// sink counted the failure.
func (g *Gateway) unrecorded(w http.ResponseWriter, id rules.Identity, host string) {
	g.logger().Warn("refused: finding not recorded", logTenant, id.Tenant, logHost, host, logReason, ReasonIncidentStoreUnavailable)
	writeRefusal(w, http.StatusServiceUnavailable, ReasonIncidentStoreUnavailable, "",
		"the gateway could not record what it found in this request; nothing was forwarded, retry shortly")
}

// reserveScanMemory takes r's share of ScanMemory: its Content-Length, or
// ScanBodyLimit when unknown, never more than the whole. Requests without a
// body take nothing.
func (g *Gateway) reserveScanMemory(r *http.Request) (release func(), ok bool) {
	if g.ScanMemory <= 0 || r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return func() {}, true
	}
	g.scanMemOnce.Do(func() { g.scanMem = semaphore.NewWeighted(g.ScanMemory) })
	n := r.ContentLength
	if n < 0 {
		n = g.ScanBodyLimit
	}
	if n <= 0 || n > g.ScanMemory {
		n = g.ScanMemory
	}
	wait := g.ScanWait
	if wait <= 0 {
		wait = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(r.Context(), wait)
	defer cancel()
	if err := g.scanMem.Acquire(ctx, n); err != nil {
		return nil, false
	}
	return func() { g.scanMem.Release(n) }, true
}

// withoutWebSocketKey returns h without a well-formed Sec-WebSocket-Key
// (base64 of exactly 16 bytes), and that key; h itself when there is none.
func withoutWebSocketKey(h http.Header) (http.Header, string) {
	vs := h.Values("Sec-WebSocket-Key")
	if len(vs) != 1 || len(vs[0]) != 24 {
		return h, ""
	}
	if b, err := base64.StdEncoding.DecodeString(vs[0]); err != nil || len(b) != 16 {
		return h, ""
	}
	c := h.Clone()
	c.Del("Sec-WebSocket-Key")
	return c, vs[0]
}

// scannedBody forwards what the scanner returned and closes the original.
type scannedBody struct {
	io.Reader
	orig io.ReadCloser
}

func (b *scannedBody) Close() error { return b.orig.Close() }
