package doctor

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/sluice-egress/sluice/internal/probetag"
)

func (d Doctor) gatewayName() string {
	if d.GatewayName == "" {
		return "sluice.internal"
	}
	return d.GatewayName
}

// probeName is a fresh name under the denied host, tagged for the resolver's events:
// no cache anywhere has seen it, so an answer means a lookup.
func (d Doctor) probeName() string {
	// Digits only: a label that switched between letters and digits could look like
	// data to the resolver, which would then record it as an incident.
	var b [4]byte
	rand.Read(b[:])
	n := binary.BigEndian.Uint32(b[:]) % 1000000
	return fmt.Sprintf("%s%06d.%s", probetag.DNSLabel, n, strings.TrimSuffix(d.denied(), "."))
}

// resolvers proves the sandbox's resolvers: the default one is Sluice (it answers a
// name only Sluice answers) and none of them answers a denied name. sluice reports the
// first.
func (d Doctor) resolvers(ctx context.Context) (out []Probe, sluice bool) {
	servers := d.Resolvers
	if servers == nil {
		path := d.ResolvConf
		if path == "" {
			path = "/etc/resolv.conf"
		}
		cc, err := dns.ClientConfigFromFile(path)
		if err != nil || len(cc.Servers) == 0 {
			return []Probe{{Name: "resolver is Sluice", Detail: fmt.Sprintf("no nameserver in %s: %v", path, err)}}, false
		}
		for _, s := range cc.Servers {
			servers = append(servers, net.JoinHostPort(s, cc.Port))
		}
	}
	if len(servers) == 0 {
		return []Probe{{Name: "resolver is Sluice", Detail: "no resolver"}}, false
	}
	// Sluice answers its own name, which no other resolver knows, and refuses a fresh
	// denied name saying so (an Extended DNS Error "sluice: ..."); a resolver that
	// answers every name does the first but not the second.
	first := Probe{Name: "resolver is Sluice " + servers[0]}
	r, err := d.exchange(ctx, servers[0], d.gatewayName())
	var refusal *dns.Msg
	if err == nil && r.Rcode == dns.RcodeSuccess && len(addrsOf(r)) > 0 {
		refusal, _ = d.exchange(ctx, servers[0], d.probeName())
	}
	switch {
	case err != nil:
		first.Detail = fmt.Sprintf("no answer for %s: %s", d.gatewayName(), clean(err))
	case r.Rcode != dns.RcodeSuccess || len(addrsOf(r)) == 0:
		first.Detail = fmt.Sprintf("answers %s with %s: the default resolver is not Sluice", d.gatewayName(), dns.RcodeToString[r.Rcode])
	case refusal == nil || refusal.Rcode != dns.RcodeRefused || !sluiceEDE(refusal):
		first.Detail = fmt.Sprintf("answers %s, but not a denied name as Sluice does (REFUSED, \"sluice: ...\"): the default resolver is not Sluice", d.gatewayName())
	default:
		first.Verdict, sluice = Pass, true
		first.Detail = fmt.Sprintf("answers %s with %s and refuses denied names itself", d.gatewayName(), strings.Join(addrsOf(r), ", "))
	}
	out = append(out, first)
	for i, s := range servers {
		p := Probe{Name: "no answer for a denied name " + s}
		r, err := d.exchange(ctx, s, d.probeName())
		switch {
		case err != nil && i == 0 && sluice:
			p.Verdict = Inconclusive
			p.Detail = "Sluice did not answer: " + clean(err)
		case err != nil:
			p.Verdict = Pass
			p.Detail = "no answer (" + clean(err) + ")"
		case r.Rcode == dns.RcodeRefused && len(r.Answer) == 0:
			p.Verdict = Pass
			p.Detail = "REFUSED"
		default:
			p.Detail = fmt.Sprintf("answered %s: it looked the name up, so names (and the data in them) leave the sandbox", dns.RcodeToString[r.Rcode])
		}
		out = append(out, p)
	}
	return out, sluice
}

// sluiceEDE reports whether a refusal carries Sluice's Extended DNS Error.
func sluiceEDE(r *dns.Msg) bool {
	if o := r.IsEdns0(); o != nil {
		for _, opt := range o.Option {
			if e, ok := opt.(*dns.EDNS0_EDE); ok && strings.HasPrefix(e.ExtraText, "sluice: ") {
				return true
			}
		}
	}
	return false
}

func (d Doctor) exchange(ctx context.Context, server, name string) (*dns.Msg, error) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), dns.TypeA)
	m.SetEdns0(1232, false)
	ctx, cancel := context.WithTimeout(ctx, min(d.timeout(), 3*time.Second))
	defer cancel()
	c := &dns.Client{Net: "udp"}
	r, _, err := c.ExchangeContext(ctx, m, server)
	return r, err
}

func addrsOf(r *dns.Msg) []string {
	var out []string
	for _, rr := range r.Answer {
		switch a := rr.(type) {
		case *dns.A:
			out = append(out, a.A.String())
		case *dns.AAAA:
			out = append(out, a.AAAA.String())
		}
	}
	return out
}
