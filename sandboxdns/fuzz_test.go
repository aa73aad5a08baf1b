package sandboxdns

import (
	"context"
	"encoding/binary"
	"log/slog"
	"net/netip"
	"strings"
	"testing"

	"github.com/miekg/dns"
)

// handle does with one raw packet what dns.Server does before and after the handler: the
// header check with acceptQuery, unpacking (FORMERR when it fails), respond, packing.
func handle(s *Server, raw []byte, src netip.AddrPort) (*dns.Msg, bool) {
	if len(raw) < 12 {
		return nil, false // the server lets such senders hang
	}
	h := dns.Header{
		Id:      binary.BigEndian.Uint16(raw[0:]),
		Bits:    binary.BigEndian.Uint16(raw[2:]),
		Qdcount: binary.BigEndian.Uint16(raw[4:]),
		Ancount: binary.BigEndian.Uint16(raw[6:]),
		Nscount: binary.BigEndian.Uint16(raw[8:]),
		Arcount: binary.BigEndian.Uint16(raw[10:]),
	}
	switch acceptQuery(h) {
	case dns.MsgIgnore:
		return nil, false
	case dns.MsgReject, dns.MsgRejectNotImplemented:
		return nil, true // answered by the server itself, with no question and no records
	}
	req := new(dns.Msg)
	if err := req.Unpack(raw); err != nil {
		return nil, true
	}
	return s.respond(context.Background(), src, "udp", req), true
}

func FuzzHandle(f *testing.F) {
	for _, q := range []struct {
		name string
		t    uint16
	}{
		{"www.example.test.", dns.TypeA},
		{"www.example.test.", dns.TypeAAAA},
		{"sluice.internal.", dns.TypeA},
		{"evil.test.", dns.TypeA},
		{"4a6f686e20536d6974682070617373776f7264.example.test.", dns.TypeA},
		{"example.test.", dns.TypeAXFR},
		{"www.example.test.", dns.TypeANY},
		{`a\.b.example.test.`, dns.TypeTXT},
	} {
		for _, edns := range []bool{false, true} {
			m := new(dns.Msg)
			m.SetQuestion(q.name, q.t)
			if edns {
				m.SetEdns0(4096, true)
			}
			b, err := m.Pack()
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
	f.Add([]byte{})
	f.Add([]byte("\x00\x01\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\xc0\x0c\x00\x01\x00\x01")) // a pointer loop

	var tb Table
	acme := netip.MustParseAddr("192.0.2.2")
	tb.Set(netip.PrefixFrom(acme, 32), Identity{Tenant: "acme", Class: "agent"})
	s := &Server{
		Mode:    Transparent,
		Addrs:   []netip.Addr{gw4, gw6},
		Sources: &tb,
		Logger:  slog.New(slog.DiscardHandler),
		// The limiter is not what is fuzzed.
		QueriesPerSecond: 1e9, Burst: 1 << 30,
	}
	s.Policy = PolicyFunc(func(q NameQuery) Verdict {
		if fs := (LabelCheck{}).ScanName(q.Name); len(fs) > 0 {
			panic("the policy was asked for a name with findings: " + q.Name)
		}
		if !strings.HasSuffix(q.Name, ".example.test") || q.Identity.Tenant != "acme" {
			return Verdict{}
		}
		return Verdict{Allow: true}
	})
	if err := s.init(netip.Addr{}); err != nil {
		f.Fatal(err)
	}

	f.Fuzz(func(t *testing.T, raw []byte) {
		src := netip.AddrPortFrom(acme, 5353)
		stranger := len(raw) > 0 && raw[0]&1 == 1
		if stranger {
			src = netip.AddrPortFrom(netip.MustParseAddr("192.0.2.99"), 5353)
		}
		resp, _ := handle(s, raw, src)
		if resp == nil {
			return
		}
		b, err := resp.Pack()
		if err != nil {
			t.Fatalf("the response does not pack: %v\n%v", err, resp)
		}
		var back dns.Msg
		if err := back.Unpack(b); err != nil {
			t.Fatalf("the packed response does not unpack: %v", err)
		}
		if len(resp.Question) > 1 || len(resp.Ns) != 0 {
			t.Fatalf("response with %d questions and %d authority records", len(resp.Question), len(resp.Ns))
		}
		if len(resp.Answer) == 0 {
			return
		}
		if stranger || resp.Rcode != dns.RcodeSuccess || len(resp.Question) != 1 {
			t.Fatalf("answers for a stranger or with rcode %s: %v", dns.RcodeToString[resp.Rcode], resp)
		}
		q := resp.Question[0]
		name, ok := normalizeName(q.Name)
		if !ok || (name != "sluice.internal" && !strings.HasSuffix(name, ".example.test")) {
			t.Fatalf("answered a name the policy does not allow: %q", q.Name)
		}
		for _, rr := range resp.Answer {
			var a netip.Addr
			switch rr := rr.(type) {
			case *dns.A:
				a, _ = netip.AddrFromSlice(rr.A)
			case *dns.AAAA:
				a, _ = netip.AddrFromSlice(rr.AAAA)
			default:
				t.Fatalf("answer of type %T", rr)
			}
			if a = a.Unmap(); a != gw4 && a != gw6 {
				t.Fatalf("answered %s, not the gateway", a)
			}
			if rr.Header().Name != q.Name {
				t.Fatalf("answer for %q to a question for %q", rr.Header().Name, q.Name)
			}
		}
	})
}

// BenchmarkRespond is the cost of one query without the sockets: allowed, denied and a
// data-bearing name in turn.
func BenchmarkRespond(b *testing.B) {
	var tb Table
	src := netip.AddrPortFrom(netip.MustParseAddr("192.0.2.2"), 5353)
	tb.Set(netip.PrefixFrom(src.Addr(), 32), Identity{Tenant: "acme", Class: "agent"})
	s := &Server{Mode: Transparent, Addrs: []netip.Addr{gw4}, Sources: &tb, Logger: slog.New(slog.DiscardHandler),
		QueriesPerSecond: 1e12, Burst: 1 << 30, EventsPerSecond: 1e12,
		Policy: PolicyFunc(func(q NameQuery) Verdict { return Verdict{Allow: strings.HasSuffix(q.Name, ".example.test")} })}
	if err := s.init(netip.Addr{}); err != nil {
		b.Fatal(err)
	}
	var reqs []*dns.Msg
	for _, n := range []string{"www.example.test.", "evil.test.", "4a6f686e20536d6974682070617373776f7264.example.test."} {
		m := new(dns.Msg)
		m.SetQuestion(n, dns.TypeA)
		reqs = append(reqs, m)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		s.respond(context.Background(), src, "udp", reqs[i%len(reqs)])
	}
}
