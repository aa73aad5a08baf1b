package gateway

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluice-egress/sluice/rules"
)

// A policy refusal of a class with on_deny: hold is held open while a
// reviewer decides: the gateway files (or joins) an access request through
// the Desk and waits, up to the class's hold_timeout, for the decision. An
// approval re-decides the request on the policy, which now holds the grant,
// and it proceeds; a denial or the timeout refuses it at once. Held
// connections are bounded (MaxHolds, and per run), and are let go by run
// end (CloseRun), reload (PolicyChanged re-decides them) and shutdown.
//
// In shadow mode (tenant or class mode: shadow) a policy refusal is
// recorded as a would-refuse incident and the request goes on. The address
// guard, the scanner and everything but the policy's allowlist stay as
// they are.

// Incident actions of the review loop.
const (
	// ActionHeld: a refusal held for a reviewer's decision.
	ActionHeld = "hold"
	// ActionWouldBlock: a refusal shadow mode let through.
	ActionWouldBlock = "would-block"
)

// maxHoldsPerRun bounds the connections one run may have held at once.
const maxHoldsPerRun = 16

// holdSet is the gateway's held connections.
type holdSet struct {
	mu    sync.Mutex
	all   map[*heldConn]struct{}
	byRun map[string]int
}

type heldConn struct {
	id     rules.Identity
	cancel context.CancelCauseFunc
}

// errHoldReleased: a hold was let go (run end, shutdown): the request is refused.
var errHoldReleased = errors.New("hold released")

// errPolicyChanged: the policy changed under a hold (a reload): re-decide
// at once; still refused, the hold ends.
var errPolicyChanged = errors.New("policy changed")

func (g *Gateway) maxHolds() int {
	if g.MaxHolds > 0 {
		return g.MaxHolds
	}
	return 256
}

// holdSlot takes a slot for a held connection; false when none is free.
func (g *Gateway) holdSlot(h *heldConn) bool {
	s := &g.holds
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.all == nil {
		s.all, s.byRun = map[*heldConn]struct{}{}, map[string]int{}
	}
	if len(s.all) >= g.maxHolds() || (h.id.Run != "" && s.byRun[h.id.Run] >= maxHoldsPerRun) {
		return false
	}
	s.all[h] = struct{}{}
	s.byRun[h.id.Run]++
	return true
}

func (g *Gateway) freeHold(h *heldConn) {
	s := &g.holds
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.all[h]; !ok {
		return
	}
	delete(s.all, h)
	if s.byRun[h.id.Run]--; s.byRun[h.id.Run] <= 0 {
		delete(s.byRun, h.id.Run)
	}
}

// releaseHolds ends the holds that match with cause; it returns how many.
func (g *Gateway) releaseHolds(match func(rules.Identity) bool, cause error) int {
	s := &g.holds
	s.mu.Lock()
	var doomed []*heldConn
	for h := range s.all {
		if match(h.id) {
			doomed = append(doomed, h)
		}
	}
	s.mu.Unlock()
	for _, h := range doomed {
		h.cancel(cause)
	}
	return len(doomed)
}

// HeldConnections reports how many refusals are held for review.
func (g *Gateway) HeldConnections() int {
	g.holds.mu.Lock()
	defer g.holds.mu.Unlock()
	return len(g.holds.all)
}

// reviewConnect carries out a policy refusal of a CONNECT the class's way: in
// shadow it lets the tunnel open (inspected, or blind for a passthrough
// host); with hold it waits for a reviewer. It returns the decision to go on
// with; a Deny means it has answered the client itself.
func (g *Gateway) reviewConnect(w http.ResponseWriter, r *http.Request, id rules.Identity, d rules.Decision, host string, port int) rules.Decision {
	nd, f := g.reviewTLS(r, id, d, host, port)
	if nd.Action == rules.Deny {
		g.refuseConnect(w, r, id, d, host, port, f)
	}
	return nd
}

// reviewTLS is reviewConnect without a client to answer (the transparent
// listener's TLS, and CONNECT): a Deny comes with the refusal to answer with.
func (g *Gateway) reviewTLS(r *http.Request, id rules.Identity, d rules.Decision, host string, port int) (rules.Decision, refusal) {
	q := rules.Query{Identity: id, Host: host, Port: port, Stage: rules.StageConnect}
	f := policyRefusal(id, d, host, port, "")
	f.method = http.MethodConnect
	if policyReasons[d.Reason] && d.Review.Shadow {
		g.shadowed(r, f)
		out := rules.Decision{Action: rules.Inspect, Tenant: d.Tenant, Review: d.Review}
		if d.PassthroughHost {
			out.Action = rules.Passthrough
		}
		return out, f
	}
	if nd, ok := g.held(r, d, &f, func() rules.Decision { return g.Policy.Decide(q) }); ok {
		return nd, f
	}
	return d, f
}

// reviewRequest is reviewConnect for a request (plain, or inside a tunnel);
// the decision it returns to go on with is an Allow.
func (g *Gateway) reviewRequest(w http.ResponseWriter, r *http.Request, id rules.Identity, d rules.Decision, host string, port int, ws bool) rules.Decision {
	f := policyRefusal(id, d, host, port, r.URL.Path)
	if policyReasons[d.Reason] && d.Review.Shadow {
		g.shadowed(r, f)
		return rules.Decision{Action: rules.Allow, Tenant: d.Tenant, Review: d.Review}
	}
	if nd, ok := g.held(r, d, &f, func() rules.Decision { return g.decideRequest(id, host, port, r, ws) }); ok {
		return nd
	}
	g.refuse(w, r, f)
	return d
}

// shadowed records what shadow mode let through.
func (g *Gateway) shadowed(r *http.Request, f refusal) {
	f.action = ActionWouldBlock
	g.record(r.Context(), r, f)
}

// held holds a policy refusal for review when the class says so. ok is true
// when the reviewer's approval (or a reload) let the request through (nd:
// the new decision). Otherwise f has been given the
// incident of the hold and what ended it, for the caller to refuse with.
func (g *Gateway) held(r *http.Request, d rules.Decision, f *refusal, redecide func() rules.Decision) (nd rules.Decision, ok bool) {
	if !policyReasons[d.Reason] || d.Review.Hold <= 0 || g.Desk == nil {
		return d, false
	}
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	hc := &heldConn{id: f.id, cancel: cancel}
	if !g.holdSlot(hc) {
		g.logger().Warn("refusal not held: too many held connections", logTenant, f.id.Tenant, "run", f.id.Run, logHost, f.host)
		f.msg += "; not held for review: too many connections are held"
		return d, false
	}
	defer g.freeHold(hc)
	held := *f
	held.action = ActionHeld
	inc, _ := g.record(r.Context(), r, held)
	start := time.Now()
	tctx, tcancel := context.WithTimeout(ctx, d.Review.Hold)
	defer tcancel()
	// The filing is stored and shown to reviewers: no more of the request
	// than its incident keeps.
	fl := Filing{Who: f.id, Host: g.evidenceHost(r.Context(), f.id.Tenant, f.host), Incident: inc}
	if f.port > 0 {
		fl.Ports = []int{f.port}
	}
	if f.method != http.MethodConnect {
		fl.Methods = []string{r.Method}
		if f.path != "" {
			fl.Paths = []string{reviewPath(f.path, g.evidencePath(r.Context(), f.id.Tenant, f.path))}
		}
	}
	x, err := g.Desk.Await(tctx, fl)
	waited := roundSecs(time.Since(start))
	f.incident = inc
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errPolicyChanged), err == nil && x.State == "approved":
		if nd := redecide(); nd.Action != rules.Deny {
			g.restartBodyClock(r)
			g.logger().Info("held request let through", logTenant, f.id.Tenant, "run", f.id.Run, logHost, f.host,
				"request", x.ID, "waited", waited)
			return nd, true
		}
		if err == nil {
			f.msg += "; held " + waited + ": approved as " + x.ID + ", but the grant does not cover this request"
		} else {
			f.msg += "; held " + waited + ": the policy changed and still refuses this request"
		}
	case errors.Is(cause, errHoldReleased):
		f.msg += "; held " + waited + " for review until the run ended or the gateway stopped"
	case err == nil:
		f.msg += "; held " + waited + " for review: " + x.State + " as " + x.ID
		if x.Note != "" {
			f.msg += ": " + strconv.Quote(x.Note)
		}
	case errors.Is(err, ErrFilingLimited):
		f.msg += "; not held: " + ErrFilingLimited.Error()
	default:
		if tctx.Err() == nil {
			g.logger().Error("held request: desk failed", logTenant, f.id.Tenant, logHost, f.host, logErr, err)
		}
		f.msg += "; held " + waited + " for review; not decided in time"
	}
	return d, false
}

func roundSecs(d time.Duration) string { return d.Round(100 * time.Millisecond).String() }

// reviewPath is the path a filing asks for: the request's own, or, when
// evidence (the path as its incident keeps it) differs, the prefix of it
// up to the segment where the first mask is (or, a clipped path, its last
// whole segment): what a grant can match, without the secret.
func reviewPath(path, evidence string) string {
	if evidence == path {
		return path
	}
	cut := len(evidence)
	for _, mark := range []string{"{redacted}", "[REDACTED"} {
		if i := strings.Index(evidence, mark); i >= 0 && i < cut {
			cut = i
		}
	}
	if p := evidence[:strings.LastIndexByte(evidence[:cut], '/')+1]; p != "" {
		return p
	}
	return "/"
}
