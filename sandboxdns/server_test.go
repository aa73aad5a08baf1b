package sandboxdns

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// Sandboxes of the tests, each a loopback source address (Linux routes all of 127/8 to lo).
var (
	acmeSrc     = netip.MustParseAddr("127.0.0.2")
	otherSrc    = netip.MustParseAddr("127.0.0.3")
	strangerSrc = netip.MustParseAddr("127.0.0.4")

	gw4 = netip.MustParseAddr("192.0.2.1")
	gw6 = netip.MustParseAddr("2001:db8:1::1")
)

// recorder is an EventSink that keeps what it is given.
type recorder struct {
	mu     sync.Mutex
	events []Event
}

func (r *recorder) Emit(_ context.Context, e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *recorder) all() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

// world is a Server on loopback, UDP and TCP on one port, with two tenants' sandboxes
// registered and a policy that counts what it is asked.
type world struct {
	srv    *Server
	addr   string // host:port of both listeners
	events *recorder
	table  *Table

	mu    sync.Mutex
	asked []NameQuery
}

// allowed is the tests' policy: acme may reach *.example.test, other may reach
// other.example.test; nobody anything else.
func (w *world) AllowName(q NameQuery) Verdict {
	w.mu.Lock()
	w.asked = append(w.asked, q)
	w.mu.Unlock()
	switch q.Identity.Tenant {
	case "acme":
		if strings.HasSuffix(q.Name, ".example.test") {
			return Verdict{Allow: true}
		}
	case "other":
		if q.Name == "other.example.test" {
			return Verdict{Allow: true}
		}
	}
	return Verdict{Reason: "host-not-allowed"}
}

func (w *world) policyAsked() []NameQuery {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.asked)
}

// newWorld serves s (Sources, Policy and Events filled in unless set) on loopback until the
// end of the test.
func newWorld(t *testing.T, s *Server) *world {
	t.Helper()
	w := &world{srv: s, events: &recorder{}, table: &Table{}}
	w.table.Set(netip.PrefixFrom(acmeSrc, 32), Identity{Tenant: "acme", Class: "agent", Run: "run-1"})
	w.table.Set(netip.PrefixFrom(otherSrc, 32), Identity{Tenant: "other", Class: "agent"})
	if s.Sources == nil {
		s.Sources = w.table
	}
	if s.Policy == nil {
		s.Policy = w
	}
	if s.Events == nil {
		s.Events = w.events
	}
	if s.Logger == nil {
		s.Logger = slog.New(slog.DiscardHandler)
	}
	pc, ln := listenPair(t)
	w.addr = pc.LocalAddr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, pc, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return w
}

// listenPair listens on 127.0.0.1 over UDP and TCP on the same free port.
func listenPair(t *testing.T) (net.PacketConn, net.Listener) {
	t.Helper()
	for range 20 {
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", pc.LocalAddr().String())
		if err == nil {
			return pc, ln
		}
		pc.Close()
	}
	t.Fatal("no port free for both UDP and TCP")
	return nil, nil
}

// query asks w for name and type from src over proto with a real client.
func (w *world) query(t *testing.T, proto string, src netip.Addr, name string, qtype uint16) *dns.Msg {
	t.Helper()
	resp, err := w.exchange(proto, src, name, qtype, true)
	if err != nil {
		t.Fatalf("%s %s %s from %s: %v", proto, dns.TypeToString[qtype], name, src, err)
	}
	return resp
}

func (w *world) exchange(proto string, src netip.Addr, name string, qtype uint16, edns bool) (*dns.Msg, error) {
	c := &dns.Client{Net: proto, Timeout: 3 * time.Second}
	if proto == "tcp" {
		c.Dialer = &net.Dialer{LocalAddr: net.TCPAddrFromAddrPort(netip.AddrPortFrom(src, 0)), Timeout: 3 * time.Second}
	} else {
		c.Dialer = &net.Dialer{LocalAddr: net.UDPAddrFromAddrPort(netip.AddrPortFrom(src, 0)), Timeout: 3 * time.Second}
	}
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	if edns {
		m.SetEdns0(1232, false)
	}
	resp, _, err := c.Exchange(m, w.addr)
	return resp, err
}

// addrs returns the A and AAAA answers of m.
func addrs(m *dns.Msg) []netip.Addr {
	var out []netip.Addr
	for _, rr := range m.Answer {
		switch rr := rr.(type) {
		case *dns.A:
			a, _ := netip.AddrFromSlice(rr.A)
			out = append(out, a.Unmap())
		case *dns.AAAA:
			a, _ := netip.AddrFromSlice(rr.AAAA)
			out = append(out, a)
		}
	}
	return out
}

// ede returns the Extended DNS Error text of m, "" if none.
func ede(m *dns.Msg) string {
	if opt := m.IsEdns0(); opt != nil {
		for _, o := range opt.Option {
			if e, ok := o.(*dns.EDNS0_EDE); ok {
				return e.ExtraText
			}
		}
	}
	return ""
}

func wantRefused(t *testing.T, m *dns.Msg, reason string) {
	t.Helper()
	if m.Rcode != dns.RcodeRefused {
		t.Errorf("rcode %s, want REFUSED", dns.RcodeToString[m.Rcode])
	}
	if len(m.Answer) != 0 {
		t.Errorf("a refusal with answers: %v", m.Answer)
	}
	if got := ede(m); got != "sluice: "+reason {
		t.Errorf("extended error %q, want %q", got, "sluice: "+reason)
	}
}

func wantAddrs(t *testing.T, m *dns.Msg, want ...netip.Addr) {
	t.Helper()
	if m.Rcode != dns.RcodeSuccess {
		t.Fatalf("rcode %s (%s), want NOERROR", dns.RcodeToString[m.Rcode], ede(m))
	}
	if got := addrs(m); !slices.Equal(got, want) {
		t.Errorf("answers %v, want %v", got, want)
	}
}

func TestExplicitMode(t *testing.T) {
	w := newWorld(t, &Server{Addrs: []netip.Addr{gw4, gw6}})
	for _, proto := range []string{"udp", "tcp"} {
		t.Run(proto, func(t *testing.T) {
			t.Run("own name answers the gateway", func(t *testing.T) {
				wantAddrs(t, w.query(t, proto, acmeSrc, "sluice.internal", dns.TypeA), gw4)
				wantAddrs(t, w.query(t, proto, acmeSrc, "SLUICE.Internal.", dns.TypeAAAA), gw6)
				m := w.query(t, proto, acmeSrc, "sluice.internal", dns.TypeMX)
				wantAddrs(t, m)
				if !m.Authoritative {
					t.Error("own name answered without AA")
				}
			})
			t.Run("every other name is refused, allowed or not", func(t *testing.T) {
				wantRefused(t, w.query(t, proto, acmeSrc, "www.example.test", dns.TypeA), ReasonNotServed)
				wantRefused(t, w.query(t, proto, acmeSrc, "denied.test", dns.TypeAAAA), ReasonNotServed)
			})
		})
	}
	if got := w.policyAsked(); len(got) != 0 {
		t.Errorf("explicit mode asked the policy: %v", got)
	}
}

func TestTransparentMode(t *testing.T) {
	w := newWorld(t, &Server{Mode: Transparent, Addrs: []netip.Addr{gw4, gw6}, TTL: 7 * time.Second})
	for _, proto := range []string{"udp", "tcp"} {
		t.Run(proto, func(t *testing.T) {
			t.Run("allowed name answers the gateway, never the real address", func(t *testing.T) {
				m := w.query(t, proto, acmeSrc, "www.example.test", dns.TypeA)
				wantAddrs(t, m, gw4)
				if m.Answer[0].Header().Ttl != 7 {
					t.Errorf("TTL %d, want 7", m.Answer[0].Header().Ttl)
				}
				wantAddrs(t, w.query(t, proto, acmeSrc, "www.example.test", dns.TypeAAAA), gw6)
			})
			t.Run("other types of an allowed name are empty", func(t *testing.T) {
				for _, qt := range []uint16{dns.TypeTXT, dns.TypeHTTPS, dns.TypeMX, dns.TypeCNAME} {
					wantAddrs(t, w.query(t, proto, acmeSrc, "www.example.test", qt))
				}
			})
			t.Run("denied name is refused", func(t *testing.T) {
				wantRefused(t, w.query(t, proto, acmeSrc, "evil.test", dns.TypeA), "host-not-allowed")
			})
		})
	}
	t.Run("the answer keeps the question's case", func(t *testing.T) {
		m := w.query(t, "udp", acmeSrc, "WwW.Example.TEST", dns.TypeA)
		if m.Answer[0].Header().Name != "WwW.Example.TEST." || m.Question[0].Name != "WwW.Example.TEST." {
			t.Errorf("answer %v", m)
		}
	})
	t.Run("the policy sees the normalised name and the source's identity", func(t *testing.T) {
		asked := w.policyAsked()
		want := NameQuery{Identity: Identity{Tenant: "acme", Class: "agent", Run: "run-1"}, Name: "evil.test"}
		if !slices.Contains(asked, want) {
			t.Errorf("policy asked %v, want %v among them", asked, want)
		}
	})
}

func TestPerSourceIdentity(t *testing.T) {
	w := newWorld(t, &Server{Mode: Transparent, Addrs: []netip.Addr{gw4}})
	wantAddrs(t, w.query(t, "udp", acmeSrc, "www.example.test", dns.TypeA), gw4)
	wantRefused(t, w.query(t, "udp", otherSrc, "www.example.test", dns.TypeA), "host-not-allowed")
	wantAddrs(t, w.query(t, "tcp", otherSrc, "other.example.test", dns.TypeA), gw4)

	t.Run("unknown source is refused, own names too, the policy unasked", func(t *testing.T) {
		before := len(w.policyAsked())
		for _, name := range []string{"www.example.test", "sluice.internal"} {
			wantRefused(t, w.query(t, "udp", strangerSrc, name, dns.TypeA), ReasonUnknownSource)
			wantRefused(t, w.query(t, "tcp", strangerSrc, name, dns.TypeA), ReasonUnknownSource)
		}
		if len(w.policyAsked()) != before {
			t.Error("the policy was asked for an unknown source")
		}
	})
	t.Run("a run that ended is unknown", func(t *testing.T) {
		w.table.DeleteIdentity(Identity{Tenant: "acme", Class: "agent", Run: "run-1"})
		wantRefused(t, w.query(t, "udp", acmeSrc, "www.example.test", dns.TypeA), ReasonUnknownSource)
	})
	var sawStranger bool
	for _, e := range w.events.all() {
		if e.Reason == ReasonUnknownSource && e.Tenant == "" && strings.HasPrefix(e.Client, strangerSrc.String()+":") {
			sawStranger = true
		}
		if e.Kind != "dns" || e.Action != "block" || e.Time.IsZero() {
			t.Errorf("event %+v", e)
		}
	}
	if !sawStranger {
		t.Errorf("no unknown-source event for %s: %+v", strangerSrc, w.events.all())
	}
}

func TestDataInName(t *testing.T) {
	w := newWorld(t, &Server{Mode: Transparent, Addrs: []netip.Addr{gw4}})
	secret := "4a6f686e20536d6974682070617373776f7264" // hex, allowed suffix: still refused
	cases := []struct{ name, rule string }{
		{secret + ".www.example.test", RuleLabelHex},
		{"mzxw6ytboi2dsnzsgm4tqnbtgezdi.example.test", RuleLabelEntropy},
		{strings.Repeat("q", 60) + ".example.test", RuleLabelLong},
	}
	for _, c := range cases {
		for _, proto := range []string{"udp", "tcp"} {
			wantRefused(t, w.query(t, proto, acmeSrc, c.name, dns.TypeA), ReasonDataInName)
		}
	}
	// Explicit mode refuses the name anyway; it is still a finding, not just "not served".
	we := newWorld(t, &Server{Addrs: []netip.Addr{gw4}})
	wantRefused(t, we.query(t, "udp", acmeSrc, secret+".sluice.test", dns.TypeA), ReasonDataInName)

	evs := append(w.events.all(), we.events.all()...)
	rules := map[string]bool{}
	for _, e := range evs {
		if e.Reason != ReasonDataInName {
			t.Errorf("event %+v: want data-in-name", e)
		}
		rules[e.Rule] = true
		if strings.Contains(e.Host, secret) || strings.Contains(e.Host, "mzxw6ytb") || strings.Contains(e.Host, "qqqqqqqq") {
			t.Errorf("event host %q keeps the data", e.Host)
		}
		if !strings.HasPrefix(e.Host, redacted+".") {
			t.Errorf("event host %q: want the data label redacted", e.Host)
		}
	}
	for _, c := range cases {
		if !rules[c.rule] {
			t.Errorf("no event with rule %s: %+v", c.rule, evs)
		}
	}
	for _, q := range w.policyAsked() {
		if strings.Contains(q.Name, secret) {
			t.Errorf("the policy was asked for a data-bearing name %q", q.Name)
		}
	}
}

// RecordName reads a refused name before it is logged and recorded: both
// get what it returns.
func TestRecordName(t *testing.T) {
	var logs bytes.Buffer
	var mu sync.Mutex
	w := newWorld(t, &Server{Addrs: []netip.Addr{gw4}, Logger: slog.New(slog.NewTextHandler(&lockedWriter{mu: &mu, w: &logs}, nil)),
		RecordName: func(_ context.Context, tenant, name string) string { return tenant + "-read-" + name }})
	wantRefused(t, w.query(t, "udp", acmeSrc, "ghp-abcdefghijklmnopqrstuvwxyzabcdefghij.evil.test", dns.TypeA), ReasonNotServed)
	e := w.events.all()
	if len(e) != 1 || !strings.HasPrefix(e[0].Host, "acme-read-") {
		t.Fatalf("events %+v: want the name as RecordName returned it", e)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(logs.String(), "host=acme-read-") {
		t.Fatalf("the log line does not have the name as RecordName returned it:\n%s", logs.String())
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func TestPluggedLabelScanner(t *testing.T) {
	var got []string
	var mu sync.Mutex
	scan := labelScannerFunc(func(name string) []Finding {
		mu.Lock()
		got = append(got, name)
		mu.Unlock()
		if strings.HasPrefix(name, "canary.") {
			return []Finding{{Rule: "scanner-canary", Label: "canary"}}
		}
		return nil
	})
	w := newWorld(t, &Server{Mode: Transparent, Addrs: []netip.Addr{gw4}, Labels: scan})
	wantRefused(t, w.query(t, "udp", acmeSrc, "canary.example.test", dns.TypeA), ReasonDataInName)
	// The plugged scanner replaces the built-in check.
	wantAddrs(t, w.query(t, "udp", acmeSrc, strings.Repeat("q", 60)+".example.test", dns.TypeA), gw4)
	if e := w.events.all(); len(e) != 1 || e[0].Rule != "scanner-canary" || e[0].Host != "{redacted}.example.test" {
		t.Errorf("events %+v", e)
	}
}

func TestLabelScanners(t *testing.T) {
	canary := labelScannerFunc(func(name string) []Finding {
		if strings.HasPrefix(name, "canary.") {
			return []Finding{{Rule: "scanner-canary", Label: "canary"}}
		}
		return nil
	})
	both := LabelScanners{LabelCheck{}, canary}
	if fs := both.ScanName("canary.example.test"); len(fs) != 1 || fs[0].Rule != "scanner-canary" {
		t.Errorf("canary: %v", fs)
	}
	if fs := both.ScanName(strings.Repeat("q", 60) + ".example.test"); len(fs) != 1 || fs[0].Rule != RuleLabelLong {
		t.Errorf("long label: %v", fs)
	}
	if fs := both.ScanName("www.example.test"); len(fs) != 0 {
		t.Errorf("plain name: %v", fs)
	}
}

type labelScannerFunc func(string) []Finding

func (f labelScannerFunc) ScanName(n string) []Finding { return f(n) }

func TestRefusedTypesAndClasses(t *testing.T) {
	w := newWorld(t, &Server{Mode: Transparent, Addrs: []netip.Addr{gw4}})
	for _, proto := range []string{"udp", "tcp"} {
		for _, qt := range []uint16{dns.TypeANY, dns.TypeAXFR, dns.TypeIXFR, dns.TypeMAILA} {
			wantRefused(t, w.query(t, proto, acmeSrc, "www.example.test", qt), ReasonTypeRefused)
			wantRefused(t, w.query(t, proto, acmeSrc, "sluice.internal", qt), ReasonTypeRefused)
		}
	}
	t.Run("AXFR through a transfer", func(t *testing.T) {
		tr := &dns.Transfer{}
		m := new(dns.Msg)
		m.SetAxfr("example.test.")
		d := &net.Dialer{LocalAddr: net.TCPAddrFromAddrPort(netip.AddrPortFrom(acmeSrc, 0))}
		c, err := d.Dial("tcp", w.addr)
		if err != nil {
			t.Fatal(err)
		}
		tr.Conn = &dns.Conn{Conn: c}
		env, err := tr.In(m, w.addr)
		if err != nil {
			t.Fatal(err)
		}
		for e := range env {
			if e.Error == nil || len(e.RR) != 0 {
				t.Errorf("transfer gave %v, %v: want an error and no records", e.RR, e.Error)
			}
		}
	})
	t.Run("CHAOS version.bind", func(t *testing.T) {
		c := &dns.Client{Dialer: &net.Dialer{LocalAddr: net.UDPAddrFromAddrPort(netip.AddrPortFrom(acmeSrc, 0))}}
		m := new(dns.Msg)
		m.SetQuestion("version.bind.", dns.TypeTXT)
		m.Question[0].Qclass = dns.ClassCHAOS
		m.SetEdns0(1232, false)
		resp, _, err := c.Exchange(m, w.addr)
		if err != nil {
			t.Fatal(err)
		}
		wantRefused(t, resp, ReasonClassRefused)
	})
	t.Run("escaped and odd names", func(t *testing.T) {
		for _, n := range []string{`www\.example.test.`, `w\000w.example.test.`, "."} {
			c := &dns.Client{Dialer: &net.Dialer{LocalAddr: net.UDPAddrFromAddrPort(netip.AddrPortFrom(acmeSrc, 0))}}
			m := new(dns.Msg)
			m.SetQuestion(n, dns.TypeA)
			m.SetEdns0(1232, false)
			resp, _, err := c.Exchange(m, w.addr)
			if err != nil {
				t.Fatal(err)
			}
			wantRefused(t, resp, ReasonBadName)
		}
	})
	for _, q := range w.policyAsked() {
		t.Errorf("the policy was asked %v", q)
	}
}

func TestRateLimit(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	var mu sync.Mutex
	s := &Server{Mode: Transparent, Addrs: []netip.Addr{gw4}, QueriesPerSecond: 1, Burst: 5, EventsPerSecond: 1}
	s.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	w := newWorld(t, s)
	for i := range 5 {
		if m := w.query(t, "udp", acmeSrc, "www.example.test", dns.TypeA); m.Rcode != dns.RcodeSuccess {
			t.Fatalf("query %d within the burst: %s", i, dns.RcodeToString[m.Rcode])
		}
	}
	for range 30 {
		wantRefused(t, w.query(t, "udp", acmeSrc, "www.example.test", dns.TypeA), ReasonRateLimited)
	}
	t.Run("over TCP too", func(t *testing.T) {
		wantRefused(t, w.query(t, "tcp", acmeSrc, "www.example.test", dns.TypeA), ReasonRateLimited)
	})
	t.Run("another source has its own budget", func(t *testing.T) {
		wantAddrs(t, w.query(t, "udp", otherSrc, "other.example.test", dns.TypeA), gw4)
	})
	t.Run("the budget refills", func(t *testing.T) {
		mu.Lock()
		now = now.Add(2 * time.Second)
		mu.Unlock()
		wantAddrs(t, w.query(t, "udp", acmeSrc, "www.example.test", dns.TypeA), gw4)
	})
	t.Run("events are limited, and the next one counts what was not recorded", func(t *testing.T) {
		var limited []Event
		for _, e := range w.events.all() {
			if e.Reason == ReasonRateLimited {
				limited = append(limited, e)
			}
		}
		// Burst 20 of events, then nothing until time moves.
		if len(limited) != 20 {
			t.Fatalf("%d rate-limited events, want 20 (the events' burst)", len(limited))
		}
		mu.Lock()
		now = now.Add(time.Second)
		mu.Unlock()
		before := len(w.events.all())
		for range 10 {
			w.query(t, "udp", acmeSrc, "www.example.test", dns.TypeA)
		}
		evs := w.events.all()
		if len(evs) == before {
			t.Fatal("no event once time moved")
		}
		if next := evs[before]; next.Reason != ReasonRateLimited || next.Suppressed != 11 {
			t.Errorf("next event %+v: want rate-limited, suppressed 11 (30+1 refused, 20 recorded)", next)
		}
	})
}

func TestMalformedPackets(t *testing.T) {
	w := newWorld(t, &Server{Mode: Transparent, Addrs: []netip.Addr{gw4}})
	d := &net.Dialer{LocalAddr: net.UDPAddrFromAddrPort(netip.AddrPortFrom(acmeSrc, 0))}
	c, err := d.Dial("udp", w.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	read := func() ([]byte, error) {
		buf := make([]byte, 2048)
		c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		n, err := c.Read(buf)
		return buf[:n], err
	}
	two := new(dns.Msg)
	two.SetQuestion("www.example.test.", dns.TypeA)
	two.Question = append(two.Question, dns.Question{Name: "evil.test.", Qtype: dns.TypeA, Qclass: dns.ClassINET})
	twoQ, _ := two.Pack()
	resp := new(dns.Msg)
	resp.SetQuestion("www.example.test.", dns.TypeA)
	resp.Response = true
	respB, _ := resp.Pack()
	upd := new(dns.Msg)
	upd.SetUpdate("example.test.")
	updB, _ := upd.Pack()
	good := new(dns.Msg)
	good.SetQuestion("www.example.test.", dns.TypeA)
	goodB, _ := good.Pack()

	cases := []struct {
		name  string
		pkt   []byte
		rcode int // -1: no answer at all
	}{
		{"empty", []byte{}, -1},
		{"short header", []byte{1, 2, 3}, -1},
		{"garbage", []byte("\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\xff\xff\xff"), dns.RcodeFormatError},
		{"two questions", twoQ, dns.RcodeFormatError},
		{"a response", respB, -1},
		{"an update", updB, dns.RcodeNotImplemented},
		{"truncated question", goodB[:len(goodB)-3], dns.RcodeFormatError},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := c.Write(tc.pkt); err != nil {
				t.Fatal(err)
			}
			b, err := read()
			if tc.rcode < 0 {
				var ne net.Error
				if !errors.As(err, &ne) || !ne.Timeout() {
					t.Fatalf("got an answer (%x, %v), want none", b, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var m dns.Msg
			if err := m.Unpack(b); err != nil {
				t.Fatal(err)
			}
			if m.Rcode != tc.rcode || len(m.Answer) != 0 {
				t.Errorf("rcode %s with %d answers, want %s and none", dns.RcodeToString[m.Rcode], len(m.Answer), dns.RcodeToString[tc.rcode])
			}
		})
	}
	// The server still answers.
	wantAddrs(t, w.query(t, "udp", acmeSrc, "www.example.test", dns.TypeA), gw4)
	for _, q := range w.policyAsked() {
		if q.Name == "evil.test" {
			t.Error("the second question of a two-question query reached the policy")
		}
	}
}

func TestServeNeedsAnAddress(t *testing.T) {
	pc, err := net.ListenPacket("udp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{}
	if err := s.Serve(context.Background(), pc, nil); err == nil {
		t.Fatal("Serve on all addresses without Addrs: want an error")
	}
	// A specific listener address is the gateway's address.
	pc2, ln := listenPair(t)
	s2 := &Server{Sources: SourcesFunc(func(netip.Addr) (Identity, bool) { return Identity{Tenant: "t"}, true })}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s2.Serve(ctx, pc2, ln) }()
	w := &world{addr: pc2.LocalAddr().String()}
	wantAddrs(t, w.query(t, "udp", netip.MustParseAddr("127.0.0.1"), "sluice.internal", dns.TypeA), netip.MustParseAddr("127.0.0.1"))
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := (&Server{Names: []string{"bad name"}, Addrs: []netip.Addr{gw4}}).Serve(context.Background(), nil, mustListen(t)); err == nil {
		t.Fatal("a bad own name: want an error")
	}
}

func mustListen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}
