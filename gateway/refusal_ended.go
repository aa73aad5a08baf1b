package gateway

import (
	"net/http"
	"strings"

	"github.com/sluice-egress/sluice/rules"
	"github.com/sluice-egress/sluice/scanner"
)

// runEnded refuses a request made with the token of a run that ended: 403
// run-ended, recorded for the run, rather than the 407 of wrong credentials
// (the token was the run's; the run is over).
func (g *Gateway) runEnded(w http.ResponseWriter, r *http.Request, id rules.Identity) {
	g.refuseIdentity(w, r, id, rules.ReasonRunEnded)
}

// refuseIdentity refuses, with 403 and reason, a request whose credentials
// were right but may not be used as they were (a run that ended, a class the
// tenant token may not select), recorded like a policy refusal.
func (g *Gateway) refuseIdentity(w http.ResponseWriter, r *http.Request, id rules.Identity, reason string) {
	d := rules.Decision{Action: rules.Deny, Reason: reason, Tenant: id.Tenant}
	if r.Method == http.MethodConnect {
		rawHost, port := splitHostPortDefault(r.Host, -1)
		if host, err := rules.NormalizeHost(rawHost); err == nil && port > 0 {
			f := policyRefusal(id, d, host, port, "")
			f.method = http.MethodConnect
			g.refuseConnect(w, r, id, d, host, port, f)
			return
		}
	}
	host, port := "", 0
	if r.URL != nil && r.URL.IsAbs() {
		host, port = splitHostPortDefault(r.URL.Host, 80)
	}
	g.refuse(w, r, policyRefusal(id, d, host, port, r.URL.Path))
}

// refuseBlocked answers a request the scanner blocked (its findings are
// recorded already, inc being the blocking one's incident): the body names
// the rule and where it found what it found, never the value.
func (g *Gateway) refuseBlocked(w http.ResponseWriter, r *http.Request, id rules.Identity, host string, port int, res *scanner.Result, inc string) {
	var found []string
	for _, f := range res.Findings {
		if f.Action != res.Verdict {
			continue
		}
		s := f.Rule
		if f.Where != "" {
			s += " in " + f.Where
		}
		if f.Decoding != "" {
			s += " (" + f.Decoding + ")"
		}
		found = append(found, s)
	}
	msg := "the request carried what policy forbids sending to " + host
	if len(found) > 0 {
		msg = "the request carried " + found[0] + ", which policy forbids sending to " + host
	}
	writeRefusalFor(w, r, refusal{id: id, status: http.StatusForbidden, reason: res.Reason, host: host, port: port,
		path: res.Path, msg: msg + "; nothing was forwarded", found: strings.Join(found, "; ")}, inc)
}
