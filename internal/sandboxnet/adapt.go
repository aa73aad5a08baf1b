package sandboxnet

import (
	"context"
	"net/netip"
	"strconv"
	"strings"

	"github.com/sluice-egress/sluice/gateway"
	"github.com/sluice-egress/sluice/incident"
	"github.com/sluice-egress/sluice/internal/probetag"
	"github.com/sluice-egress/sluice/rules"
	"github.com/sluice-egress/sluice/runs"
	"github.com/sluice-egress/sluice/sandboxdns"
	"github.com/sluice-egress/sluice/scanner"
)

// allowName is the resolver's policy in transparent mode: a name resolves (to the
// gateway) when the gateway would take a CONNECT to it on 443 or 80 for that sandbox,
// decided by the engine in force.
func (n *Net) allowName(q sandboxdns.NameQuery) sandboxdns.Verdict {
	id := rules.Identity{Tenant: q.Identity.Tenant, Class: q.Identity.Class, Run: q.Identity.Run}
	var reason string
	for _, port := range []int{443, 80} {
		d := n.Policy.Decide(rules.Query{Identity: id, Host: q.Name, Port: port, Stage: rules.StageConnect})
		if d.Action != rules.Deny {
			return sandboxdns.Verdict{Allow: true}
		}
		if reason == "" {
			reason = d.Reason
		}
	}
	return sandboxdns.Verdict{Reason: reason}
}

// sandboxClaims is the runs' Sandboxes: the sources table.
type sandboxClaims struct{ t *sandboxdns.Table }

var _ runs.Sandboxes = sandboxClaims{}

func (c sandboxClaims) Claim(p netip.Prefix, id rules.Identity) error {
	return c.t.Claim(p, sandboxdns.Identity{Tenant: id.Tenant, Class: id.Class, Run: id.Run})
}

func (c sandboxClaims) Release(run string) { c.t.DeleteRun(run) }

// dnsEvents hands the resolver's refusals to the gateway's event sink as incidents of
// kind "dns": the query type goes in Method.
type dnsEvents struct{ sink gateway.EventSink }

func (d dnsEvents) Emit(ctx context.Context, e sandboxdns.Event) {
	if d.sink == nil {
		return
	}
	in := incident.Incident{Time: e.Time, Tenant: e.Tenant, Class: e.Class, Run: e.Run,
		Kind: e.Kind, Reason: e.Reason, Action: e.Action, Host: e.Host, Port: 53,
		Method: e.QType, Client: e.Client, Rule: e.Rule,
		// The doctor's names: counted, not stored (a name is no secret to tag).
		Probe: strings.HasPrefix(e.Host, probetag.DNSLabel) && e.Reason != sandboxdns.ReasonDataInName}
	if e.Suppressed > 0 {
		in.Snippet = strconv.FormatInt(e.Suppressed, 10) + " earlier refusals of this source not recorded"
	}
	d.sink.Emit(ctx, in)
}

// scannerLabels runs the scanner's detectors (secrets, canaries, phantoms) over a
// queried name: a secret spelt into a name is refused like one in a URL.
type scannerLabels struct{ h *scanner.Holder }

func (l scannerLabels) ScanName(name string) []sandboxdns.Finding {
	if l.h == nil {
		return nil
	}
	sc := l.h.Current()
	if sc == nil {
		return nil
	}
	fs, err := sc.ScanText(context.Background(), "dns-name", []byte(name))
	if err != nil {
		// Fail closed: a name the scanner could not read is not answered.
		return []sandboxdns.Finding{{Rule: "scan-error"}}
	}
	var out []sandboxdns.Finding
	for _, f := range fs {
		if f.Kind != scanner.KindOversize {
			out = append(out, sandboxdns.Finding{Rule: f.Rule})
		}
	}
	return out
}
