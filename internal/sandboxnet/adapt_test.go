package sandboxnet

import (
	"context"
	"testing"

	"github.com/sluice-egress/sluice/incident"
	"github.com/sluice-egress/sluice/rules"
	"github.com/sluice-egress/sluice/sandboxdns"
)

type sinkFunc func(incident.Incident)

func (f sinkFunc) Emit(_ context.Context, in incident.Incident) (string, error) {
	f(in)
	return "", nil
}

// A doctor's probe name is counted, not stored; a name that carries data is
// an incident even under the probe label (the label is no way to hide it).
func TestDNSEventsProbe(t *testing.T) {
	var got incident.Incident
	d := dnsEvents{sink: sinkFunc(func(in incident.Incident) { got = in })}
	d.Emit(context.Background(), sandboxdns.Event{Tenant: "acme", Host: "sluice-probe-denied.example.test", Reason: "host-not-allowed", QType: "A"})
	if !got.Probe || got.Port != 53 || got.Method != "A" {
		t.Fatalf("probe name: %+v", got)
	}
	d.Emit(context.Background(), sandboxdns.Event{Tenant: "acme", Host: "sluice-probe-x.example.test", Reason: sandboxdns.ReasonDataInName, Suppressed: 3})
	if got.Probe || got.Snippet == "" {
		t.Fatalf("data in a probe name: %+v", got)
	}
}

type decideFunc func(rules.Query) rules.Decision

func (f decideFunc) Decide(q rules.Query) rules.Decision { return f(q) }

// A name resolves when a CONNECT to it on 443 or 80 would be taken, and is
// refused with the policy's reason otherwise.
func TestAllowName(t *testing.T) {
	n := &Net{Policy: decideFunc(func(q rules.Query) rules.Decision {
		if q.Host == "web.example.test" && q.Port == 80 {
			return rules.Decision{Action: rules.Inspect}
		}
		return rules.Decision{Action: rules.Deny, Reason: "host-not-allowed"}
	})}
	if v := n.allowName(sandboxdns.NameQuery{Name: "web.example.test"}); !v.Allow {
		t.Fatalf("a host allowed on port 80: %+v", v)
	}
	if v := n.allowName(sandboxdns.NameQuery{Name: "evil.example.test"}); v.Allow || v.Reason != "host-not-allowed" {
		t.Fatalf("a denied host: %+v", v)
	}
	if n.Sandboxes() != nil {
		t.Fatal("runs may register sandbox addresses although nothing listens for them")
	}
}
