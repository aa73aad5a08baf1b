package sandboxdns

import (
	"context"
	"log/slog"
	"net/netip"
	"strconv"
	"time"

	"github.com/miekg/dns"
)

// ednsSize is the UDP payload size the resolver advertises: the size that avoids
// fragmentation on any path (the DNS flag day 2020 value).
const ednsSize = 1232

// respond builds the answer to req from src; nil means no answer at all. It never sends a
// query anywhere: every answer is made here, from Names, Addrs and the policy.
func (s *Server) respond(ctx context.Context, src netip.AddrPort, proto string, req *dns.Msg) *dns.Msg {
	if req.Response {
		return nil
	}
	m := new(dns.Msg)
	m.SetReply(req)
	// The sandbox's only resolver: stubs that insist on a recursive server get one.
	m.RecursionAvailable = true
	if req.Opcode != dns.OpcodeQuery {
		m.Question = nil
		m.Rcode = dns.RcodeNotImplemented
		return m
	}
	if len(req.Question) != 1 {
		m.Question = nil
		m.Rcode = dns.RcodeFormatError
		return m
	}
	opt := req.IsEdns0()
	if opt != nil {
		m.SetEdns0(ednsSize, false)
	}
	q := req.Question[0]
	r := refusal{s: s, ctx: ctx, m: m, opt: opt, ev: Event{
		Kind:   Kind,
		Action: ActionBlock,
		QType:  qtypeString(q.Qtype),
		Client: src.String(),
	}}

	name, ok := normalizeName(q.Name)
	r.ev.Host = redacted
	if ok {
		r.ev.Host = redactName(name, nil)
	}
	var id Identity
	known := false
	if s.Sources != nil {
		id, known = s.Sources.Lookup(src.Addr())
	}
	r.ev.Tenant, r.ev.Class, r.ev.Run = id.Tenant, id.Class, id.Run

	// Unknown sources are limited too: a flood from anywhere costs one limiter each.
	src0 := s.lim.get(src.Addr())
	if !src0.allowQuery(s.now()) {
		return r.refuse(src0, ReasonRateLimited, dns.ExtendedErrorCodeProhibited, "")
	}
	if !known {
		return r.refuse(src0, ReasonUnknownSource, dns.ExtendedErrorCodeProhibited, "")
	}
	switch {
	case !ok:
		return r.refuse(src0, ReasonBadName, dns.ExtendedErrorCodeBlocked, "")
	case q.Qclass != dns.ClassINET:
		return r.refuse(src0, ReasonClassRefused, dns.ExtendedErrorCodeNotSupported, "")
	case refusedType(q.Qtype):
		return r.refuse(src0, ReasonTypeRefused, dns.ExtendedErrorCodeNotSupported, "")
	}
	if s.names[name] {
		m.Authoritative = true
		return s.answerAddrs(m, q, proto, src, id, name)
	}
	if fs := s.labels().ScanName(name); len(fs) > 0 {
		r.ev.Host = redactName(name, fs)
		return r.refuse(src0, ReasonDataInName, dns.ExtendedErrorCodeBlocked, fs[0].Rule)
	}
	if s.Mode != Transparent {
		return r.refuse(src0, ReasonNotServed, dns.ExtendedErrorCodeBlocked, "")
	}
	v := Verdict{Reason: ReasonHostNotAllowed}
	if s.Policy != nil {
		v = s.Policy.AllowName(NameQuery{Identity: id, Name: name})
	}
	if !v.Allow {
		reason := v.Reason
		if reason == "" {
			reason = ReasonHostNotAllowed
		}
		return r.refuse(src0, reason, dns.ExtendedErrorCodeBlocked, "")
	}
	return s.answerAddrs(m, q, proto, src, id, name)
}

// refusedType reports the query types never answered: ANY (RFC 8482 lets a server decline
// it), zone transfers, and the obsolete mailbox types that act like ANY.
func refusedType(t uint16) bool {
	switch t {
	case dns.TypeANY, dns.TypeAXFR, dns.TypeIXFR, dns.TypeMAILA, dns.TypeMAILB:
		return true
	}
	return false
}

// qtypeString names a query type the way dig does ("TXT", "TYPE65280").
func qtypeString(t uint16) string {
	if s, ok := dns.TypeToString[t]; ok {
		return s
	}
	return "TYPE" + strconv.Itoa(int(t))
}

// answerAddrs answers an allowed name with the gateway's addresses: A gets the IPv4 ones,
// AAAA the IPv6 ones, every other type an empty answer (NODATA), so that clients asking
// for HTTPS or SVCB records fall back to A and AAAA.
func (s *Server) answerAddrs(m *dns.Msg, q dns.Question, proto string, src netip.AddrPort, id Identity, name string) *dns.Msg {
	ttl := uint32(s.ttl().Seconds())
	for _, a := range s.addrs {
		hdr := dns.RR_Header{Name: q.Name, Class: dns.ClassINET, Ttl: ttl}
		switch {
		case q.Qtype == dns.TypeA && a.Is4():
			hdr.Rrtype = dns.TypeA
			m.Answer = append(m.Answer, &dns.A{Hdr: hdr, A: a.AsSlice()})
		case q.Qtype == dns.TypeAAAA && a.Is6():
			hdr.Rrtype = dns.TypeAAAA
			m.Answer = append(m.Answer, &dns.AAAA{Hdr: hdr, AAAA: a.AsSlice()})
		}
	}
	if l := s.logger(); l.Enabled(context.Background(), slog.LevelDebug) {
		l.Debug("sandboxdns: answered", "tenant", id.Tenant, "run", id.Run, "host", redactName(name, nil),
			"qtype", qtypeString(q.Qtype), "client", src.String(), "proto", proto, "answers", len(m.Answer))
	}
	return m
}

func (s *Server) ttl() time.Duration {
	if s.TTL > 0 {
		return s.TTL
	}
	return 30 * time.Second
}

// refusal answers REFUSED and records why.
type refusal struct {
	s   *Server
	ctx context.Context
	m   *dns.Msg
	opt *dns.OPT
	ev  Event
}

// refuse sets REFUSED with an Extended DNS Error (RFC 8914) naming the reason, so that a
// person reading dig's output sees why, and records the refusal within the source's event
// rate.
func (r *refusal) refuse(src *source, reason string, ede uint16, rule string) *dns.Msg {
	r.m.Rcode = dns.RcodeRefused
	r.m.Answer, r.m.Ns = nil, nil
	if r.opt != nil {
		if o := r.m.IsEdns0(); o != nil {
			o.Option = append(o.Option, &dns.EDNS0_EDE{InfoCode: ede, ExtraText: "sluice: " + reason})
		}
	}
	ok, suppressed := src.allowEvent(r.s.now())
	if !ok {
		return r.m
	}
	ev := r.ev
	ev.Time, ev.Reason, ev.Rule, ev.Suppressed = r.s.now(), reason, rule, suppressed
	if r.s.RecordName != nil {
		ev.Host = r.s.RecordName(r.ctx, ev.Tenant, ev.Host)
	}
	r.s.logger().LogAttrs(r.ctx, slog.LevelInfo, "sandboxdns: refused",
		slog.String("reason", reason), slog.String("tenant", ev.Tenant), slog.String("run", ev.Run),
		slog.String("host", ev.Host), slog.String("qtype", ev.QType), slog.String("client", ev.Client),
		slog.String("rule", rule), slog.Int64("suppressed", suppressed))
	r.s.events().Emit(r.ctx, ev)
	return r.m
}
