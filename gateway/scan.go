package gateway

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/sluice-egress/sluice/rules"
	"github.com/sluice-egress/sluice/scanner"
)

// Scanner inspects a request before it is forwarded. *scanner.Scanner
// implements it. An error means the request was not fully checked: the
// gateway refuses it (fail closed).
type Scanner interface {
	Scan(ctx context.Context, req *scanner.Request) (*scanner.Result, error)
}

var (
	_ Scanner         = (*scanner.Scanner)(nil)
	_ ScanFootprinter = (*scanner.Scanner)(nil)
	_ ScanFootprinter = (*scanner.Holder)(nil)
	_ PathMasker      = (*scanner.Scanner)(nil)
	_ PathMasker      = (*scanner.Holder)(nil)
)

// ReasonScanFailed is sent when the scanner failed or ran out of time;
// ReasonScanBusy when the bytes already held for scanning left no room.
const (
	ReasonScanFailed = "scan-failed"
	ReasonScanBusy   = "scan-busy"
)

// reserveMore is what the scanner takes more of r's scan memory with
// (what its body inflates to), waiting as admitBody does; nil when r holds
// none (no budget, or no body admitted).
func (g *Gateway) reserveMore(r *http.Request) func(n int64) bool {
	tb, _ := r.Context().Value(bodyKey{}).(*timedBody)
	if tb == nil || tb.hold == nil || tb.hold.b == nil {
		return nil
	}
	return func(n int64) bool {
		ctx, cancel := context.WithTimeout(r.Context(), g.scanWait())
		defer cancel()
		return tb.hold.grow(ctx, n)
	}
}

// scan checks what a request carries before it is forwarded: it emits one
// event per finding, refuses a blocked request (403 with the reason and the
// incident id) and applies redactions to r. It reports false when it has
// answered the client itself, and else the path a record of the request
// may keep (scanner.Result.Path). Without a Scanner nothing is scanned. The
// memory the scan holds was reserved by admitBody, and what the body
// inflates to is taken as it inflates (reserveMore).
func (g *Gateway) scan(w http.ResponseWriter, r *http.Request, id rules.Identity, host string, port int) (keep string, ok bool) {
	if g.Scanner == nil {
		return r.URL.Path, true
	}
	// A WebSocket key is a random 16-byte nonce: it looks like a token to
	// every entropy rule. A well-formed one is left out of the scan (it can
	// carry no more than 16 bytes); anything else in that header is scanned.
	hdr, wsKey := withoutWebSocketKey(r.Header)
	req := &scanner.Request{
		Tenant: id.Tenant, Host: host, URL: r.URL, Header: hdr,
		// A run's requests are one sandbox's; without a run, its tenant
		// and class are.
		Source: id.Class + "/" + id.Run,
		// A link leads outside when the client could not open that host.
		Allowed: g.linkAllowed(id),
	}
	if r.Body != nil && r.Body != http.NoBody {
		req.Body, req.Size = r.Body, r.ContentLength
		req.Reserve = g.reserveMore(r)
	}
	allowed, err := g.phantomAllowed(r, id, host, port)
	if err != nil {
		// The sandbox holds a real secret and the alert saying so could not
		// be recorded: nothing goes on unrecorded.
		g.unrecorded(w, id, host)
		return "", false
	}
	req.PhantomAllowed = allowed
	start := time.Now()
	res, err := g.safeScan(r.Context(), req)
	if g.OnScan != nil {
		g.OnScan(time.Since(start))
	}
	switch {
	case err != nil && bodyTimedOut(r):
		g.refuseBodyTimeout(w, r, id, host, port)
		return "", false
	case errors.Is(err, scanner.ErrScanMemory):
		g.refuse(w, r, refusal{id: id, status: http.StatusServiceUnavailable, reason: ReasonScanBusy, host: host, port: port,
			msg: "what the request inflates to does not fit in what the gateway may hold for scanning; retry shortly"})
		return "", false
	case errors.Is(err, errPanicked):
		g.refuse(w, r, refusal{id: id, status: http.StatusServiceUnavailable, reason: ReasonInternalError,
			host: host, port: port, msg: "the gateway failed checking the request; nothing was forwarded"})
		return "", false
	case err != nil:
		g.logger().Warn("scan failed", logTenant, id.Tenant, logHost, host, logErr, err)
		g.refuse(w, r, refusal{id: id, status: http.StatusServiceUnavailable, reason: ReasonScanFailed,
			host: host, port: port, path: "", msg: "the request could not be checked; nothing was forwarded"})
		return "", false
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
		res.Release()
		if c, ok := r.Body.(io.Closer); ok && r.Body != nil {
			c.Close()
		}
		g.unrecorded(w, id, host)
		return "", false
	}
	if res.Verdict == scanner.Block {
		res.Release()
		if c, ok := r.Body.(io.Closer); ok && r.Body != nil {
			c.Close()
		}
		g.refuseBlocked(w, r, id, host, port, res, incidentID)
		return "", false
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
	return res.Path, true
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
// The scanner's copy goes back to its pool once read to its end (nothing
// closes this body: ReverseProxy hands the transport a wrapper whose Close
// does nothing).
type scannedBody struct {
	io.Reader
	orig io.ReadCloser
}

func (b *scannedBody) Close() error { return b.orig.Close() }

// check scans one message. It returns nil, nil when the message may go on,
// else what step returns to end the session.
func (s *wsSession) check(where string, data []byte) ([][]byte, error) {
	g, r, id := s.g, s.r, s.id
	if g.Scanner == nil {
		return nil, nil // opened for the scrub of the upstream's side only
	}
	ctx := context.WithoutCancel(r.Context())
	res, err := g.scanMessage(ctx, id, s.host, data)
	if errors.Is(err, errPanicked) {
		s.record(ReasonInternalError)
		return s.close(wsCloseInternalError, ReasonInternalError)
	}
	if err != nil {
		g.logger().Warn("websocket scan failed", logTenant, id.Tenant, logHost, s.host, logErr, err)
		s.record(ReasonScanFailed)
		return s.close(wsCloseInternalError, ReasonScanFailed)
	}
	s.found = res.Findings
	v := g.messageVerdict(ctx, r, id, s.host, s.port, where, res)
	if !v.blocked && v.recErr != nil {
		// An alert that could not be recorded: the message does not go on
		// unrecorded.
		return s.close(wsCloseInternalError, ReasonIncidentStoreUnavailable)
	}
	if !v.blocked {
		return nil, nil
	}
	return s.close(wsClosePolicy, v.reason)
}

// linkAllowed says whether a link to host leads inside: a host the client
// could open itself (a link elsewhere that carries data is an exfil link).
func (g *Gateway) linkAllowed(id rules.Identity) func(h string) bool {
	return func(h string) bool {
		n, err := rules.NormalizeHost(h)
		if err != nil {
			return false
		}
		return g.Policy.Decide(rules.Query{Identity: id, Host: n, Port: 443, Stage: rules.StageConnect}).Action != rules.Deny
	}
}

// scanMessage scans one message of a stream (a WebSocket or gRPC message),
// timed into OnScan; a panic in the scanner is an error (errPanicked).
func (g *Gateway) scanMessage(ctx context.Context, id rules.Identity, host string, data []byte) (*scanner.Result, error) {
	req := &scanner.Request{
		Tenant: id.Tenant, Host: host, Body: bytes.NewReader(data),
		Allowed: g.linkAllowed(id),
		// PhantomAllowed stays nil: phantoms are swapped in headers and
		// queries only, so a phantom inside a message is always a misuse.
	}
	start := time.Now()
	res, err := g.safeScan(ctx, req)
	if g.OnScan != nil {
		g.OnScan(time.Since(start))
	}
	if res != nil {
		res.Release() // the message goes on from its own bytes
	}
	return res, err
}

// verdict is what the findings of one stream message come to.
type verdict struct {
	blocked  bool
	reason   string // for a blocked message
	incident string // the first blocking finding's incident, or ""
	recErr   error  // a finding that could not be recorded
}

// messageVerdict records the findings of one message of a stream (where:
// its place, e.g. "websocket:message[3]") and says what they come to.
// Redaction would rewrite a message the client framed and may have signed
// or counted: on a stream, redact blocks.
func (g *Gateway) messageVerdict(ctx context.Context, r *http.Request, id rules.Identity, host string, port int, where string, res *scanner.Result) verdict {
	v := verdict{blocked: res.Verdict == scanner.Block || res.Verdict == scanner.Redact, reason: res.Reason}
	for _, f := range res.Findings {
		if f.Action == scanner.Redact {
			f.Action = scanner.Block
		}
		if v.reason == "" && f.Action == scanner.Block {
			v.reason = scanner.KindReason(f.Kind)
		}
		if f.Where != "" && f.Where != "body" {
			f.Where = where + "/" + f.Where
		} else {
			f.Where = where
		}
		inc, err := g.recordFinding(ctx, r, id, host, port, g.evidencePath(ctx, id.Tenant, r.URL.Path), f)
		if v.incident == "" && f.Action == scanner.Block {
			v.incident = inc
		}
		if err != nil {
			v.recErr = err
		}
	}
	if v.blocked && v.reason == "" {
		v.reason = scanner.ReasonSecret
	}
	return v
}
