package rules

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-egress/sluice/rules/match"
)

// Trace is the chain that decides a query: who asked (the run, its class),
// each entry considered in Decide's order and why it matched or not, and the
// decision with the grant, preset or config line it came from. It holds
// entries (no secrets) of the asking tenant only.
type Trace struct {
	Tenant, Class, Run string
	// RunState is "live", "ended" (removed or expired: the run's own
	// entries are gone, and Decide refuses it) or "" for a tenant token.
	RunState string
	// Host is the query's host as Decide normalised it.
	Host  string
	Port  int
	Stage Stage
	// Method and Path are the request's (StageRequest).
	Method, Path string
	Review       Review
	Steps        []TraceStep
	Decision     Decision
}

// TraceStep is one entry considered.
type TraceStep struct {
	// List is where the entry sits: "class passthrough", "class allow",
	// "run passthrough", "run allow", "grants passthrough", "grants allow".
	List  string
	Entry Entry
	// Origin is Entry.Origin spelled out ("sluice.yaml:12", "grant ar_1").
	Origin string
	// Matched: the entry decided the query. Otherwise Why says what did not
	// fit ("host", "port 8443 not in [443]", …).
	Matched bool
	Why     string
}

// Trace explains Decide(q): the same lists in the same order, each entry
// with why it matched or not, up to the one that matched. Its Decision is
// Decide's.
func (e *Engine) Trace(q Query) Trace {
	t := Trace{Tenant: q.Identity.Tenant, Class: q.Identity.Class, Run: q.Identity.Run, Port: q.Port, Stage: q.Stage,
		Method: strings.ToUpper(q.Method), Path: q.Path}
	t.Host, _ = match.NormalizeHost(q.Host)
	t.Decision = e.Decide(q)
	t.Review = t.Decision.Review
	tn := e.tenants[q.Identity.Tenant]
	if tn == nil || tn.classes[q.Identity.Class] == nil {
		return t
	}
	cl := tn.classes[q.Identity.Class]
	var own *class
	if q.Identity.Run != "" {
		r := e.runs.get(q.Identity.Run)
		if r == nil || r.tenant != q.Identity.Tenant || r.class != q.Identity.Class || r.expired(time.Now) {
			t.RunState = "ended"
			return t
		}
		t.RunState = "live"
		own = r.own
	}
	grants := e.grants.classFor(q.Identity.Tenant, q.Identity.Class, q.Identity.Run, time.Now)
	t.Steps = traceIn(q, t.Host, []namedClass{{"class", cl}, {"run", own}, {"grants", grants}})
	return t
}

// Trace explains Decide(q) on this policy alone, for `sluice policy check`.
func (p *EffectivePolicy) Trace(q Query) Trace {
	d := p.Decide(q)
	t := Trace{Tenant: p.Tenant, Class: p.Class, Port: q.Port, Stage: q.Stage, Method: strings.ToUpper(q.Method), Path: q.Path, Decision: d}
	t.Host, _ = match.NormalizeHost(q.Host)
	t.Steps = traceIn(q, t.Host, []namedClass{{"policy", p.compiled}})
	return t
}

type namedClass struct {
	name string
	c    *class
}

// traceIn walks the lists as decideIn does.
func traceIn(q Query, host string, classes []namedClass) []TraceStep {
	type list struct {
		name    string
		rules   []*rule
		connect bool
	}
	var lists []list
	if q.Stage == StageConnect {
		for _, nc := range classes {
			if nc.c != nil {
				lists = append(lists, list{nc.name + " passthrough", nc.c.passthrough, true})
			}
		}
	}
	for _, nc := range classes {
		if nc.c != nil {
			lists = append(lists, list{nc.name + " allow", nc.c.allow, q.Stage == StageConnect})
		}
	}
	var steps []TraceStep
	for _, l := range lists {
		for _, r := range l.rules {
			st := TraceStep{List: l.name, Entry: cloneEntry(*r.entry), Origin: r.entry.Origin.String()}
			st.Why = whyNot(q, host, r, l.connect)
			st.Matched = st.Why == ""
			steps = append(steps, st)
			if st.Matched {
				return steps
			}
		}
	}
	return steps
}

// whyNot is what of q the rule does not allow; "" when it matches.
func whyNot(q Query, host string, r *rule, connect bool) string {
	if !r.host.Match(host) {
		return "host " + host + " is not " + r.host.String()
	}
	if !slices.Contains(r.ports, q.Port) {
		return fmt.Sprintf("port %d not in %v", q.Port, r.ports)
	}
	if connect {
		return ""
	}
	method := strings.ToUpper(q.Method)
	if len(r.methods) > 0 && !slices.Contains(r.methods, method) {
		return "method " + method + " not in [" + strings.Join(r.methods, " ") + "]"
	}
	if len(r.paths) > 0 {
		p, err := match.CleanPath(q.Path)
		if err != nil {
			return "path " + strconv.Quote(q.Path) + " is malformed"
		}
		if !slices.ContainsFunc(r.paths, func(pr string) bool { return match.PathUnder(p, pr) }) {
			return "path " + strconv.Quote(p) + " not under [" + strings.Join(r.paths, " ") + "]"
		}
	}
	if q.WebSocket && !r.entry.WebSocket {
		return "websocket not allowed"
	}
	return ""
}
