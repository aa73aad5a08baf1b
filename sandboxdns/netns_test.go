package sandboxdns

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/sluice-egress/sluice/internal/testnet"
)

// The internet's authoritative server and the real address of the one name it knows.
var (
	authAddr = netip.MustParseAddr("198.51.100.53")
	realAddr = netip.MustParseAddr("203.0.113.10")
)

// authServer is an authoritative DNS server in the test's internet namespace that knows
// www.example.test and logs every query it receives, from whomever.
type authServer struct {
	mu  sync.Mutex
	log []authQuery
}

type authQuery struct {
	name string // lower case, no trailing dot
	typ  uint16
	from netip.Addr
}

func (a *authServer) ServeDNS(w dns.ResponseWriter, req *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(req)
	m.Authoritative = true
	if len(req.Question) == 1 {
		q := req.Question[0]
		name := strings.ToLower(strings.TrimSuffix(q.Name, "."))
		a.mu.Lock()
		a.log = append(a.log, authQuery{name, q.Qtype, addrOf(w.RemoteAddr()).Addr()})
		a.mu.Unlock()
		switch {
		case name != "www.example.test":
			m.Rcode = dns.RcodeNameError
		case q.Qtype == dns.TypeA:
			m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeA, Class: dns.ClassINET}, A: realAddr.AsSlice()})
		}
	}
	w.WriteMsg(m)
}

func (a *authServer) queries() []authQuery {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]authQuery(nil), a.log...)
}

// serveIn runs h on addr:53 over UDP and TCP inside ns until the end of the test.
func serveIn(t *testing.T, ns *testnet.NS, addr netip.Addr, serve func(ctx context.Context, pc net.PacketConn, ln net.Listener) error) {
	t.Helper()
	hp := netip.AddrPortFrom(addr, 53).String()
	var pc net.PacketConn
	if err := ns.Do(func() error {
		var err error
		pc, err = net.ListenPacket("udp", hp)
		return err
	}); err != nil {
		t.Fatalf("listen udp %s in %s: %v", hp, ns.Name, err)
	}
	ln, err := ns.Listen("tcp", hp)
	if err != nil {
		pc.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, pc, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve %s in %s: %v", hp, ns.Name, err)
		}
	})
}

// serveDNSServer adapts a dns.Handler to serveIn.
func serveDNSServer(h dns.Handler) func(ctx context.Context, pc net.PacketConn, ln net.Listener) error {
	return func(ctx context.Context, pc net.PacketConn, ln net.Listener) error {
		u := &dns.Server{PacketConn: pc, Handler: h}
		tc := &dns.Server{Listener: ln, Handler: h}
		go u.ActivateAndServe()
		go tc.ActivateAndServe()
		<-ctx.Done()
		u.Shutdown()
		tc.Shutdown()
		return nil
	}
}

// useResolver makes processes started in ns with `ip netns exec` use nameserver: ip netns
// exec bind-mounts /etc/netns/NAME/resolv.conf over /etc/resolv.conf.
func useResolver(t *testing.T, ns *testnet.NS, nameserver netip.Addr) {
	t.Helper()
	const base = "/etc/netns"
	_, statErr := os.Stat(base)
	dir := filepath.Join(base, ns.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("remove %s: %v", dir, err)
		}
		if errors.Is(statErr, os.ErrNotExist) {
			os.Remove(base) // only if we made it, and only if empty
		}
	})
	want := "nameserver " + nameserver.String() + "\noptions attempts:1 timeout:2\n"
	if err := os.WriteFile(filepath.Join(dir, "resolv.conf"), []byte(want), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := ns.Run(t, "cat", "/etc/resolv.conf"); err != nil || got != want {
		t.Fatalf("resolv.conf in %s is %q (%v), want %q", ns.Name, got, err, want)
	}
}

// getent resolves name in the sandbox the way its programs do (glibc, resolv.conf) and
// returns the IPv4 addresses, nil when the lookup fails.
func getent(t *testing.T, ns *testnet.NS, name string) []netip.Addr {
	t.Helper()
	out, err := ns.Run(t, "getent", "ahostsv4", name)
	if err != nil {
		return nil
	}
	seen := map[netip.Addr]bool{}
	var addrs []netip.Addr
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if a, err := netip.ParseAddr(f[0]); err == nil && !seen[a] {
			seen[a] = true
			addrs = append(addrs, a)
		}
	}
	return addrs
}

// TestNetns puts the resolver in the gateway namespace of a testnet world, with the test's
// own authoritative server in the internet namespace, and shows that a sandbox using it
// resolves what it may and that nothing it may not reaches the internet's server.
func TestNetns(t *testing.T) {
	w := testnet.New(t)
	w.AddUpstreamAddr(t, authAddr)
	auth := &authServer{}
	serveIn(t, w.Internet, authAddr, serveDNSServer(auth))

	var sources Table
	sources.Set(netip.PrefixFrom(w.SandboxAddr, 32), Identity{Tenant: "acme", Class: "agent", Run: "run-1"})
	sources.Set(netip.PrefixFrom(w.SandboxAddr6, 128), Identity{Tenant: "acme", Class: "agent", Run: "run-1"})
	policy := PolicyFunc(func(q NameQuery) Verdict {
		if q.Identity.Tenant == "acme" && (q.Name == "www.example.test" || strings.HasSuffix(q.Name, ".example.test")) {
			return Verdict{Allow: true}
		}
		return Verdict{Reason: "host-not-allowed"}
	})
	events := &recorder{}
	// Transparent on the gateway's IPv4 sandbox address, explicit on its IPv6 one.
	transparent := &Server{Mode: Transparent, Addrs: []netip.Addr{w.GatewaySandboxAddr}, Sources: &sources,
		Policy: policy, Events: events, Logger: slog.New(slog.DiscardHandler)}
	explicit := &Server{Addrs: []netip.Addr{w.GatewaySandboxAddr6}, Sources: &sources,
		Policy: policy, Events: events, Logger: slog.New(slog.DiscardHandler)}
	serveIn(t, w.Gateway, w.GatewaySandboxAddr, transparent.Serve)
	serveIn(t, w.Gateway, w.GatewaySandboxAddr6, explicit.Serve)

	data := "4a6f686e20536d6974682070617373776f7264.www.example.test"
	denied := []string{"evil.test", "www.evil.test", data, "mzxw6ytboi2dsnzsgm4tqnbtgezdi.example.test"}

	t.Run("the sandbox has no resolver but the gateway", func(t *testing.T) {
		c, err := w.Sandbox.DialContext(context.Background(), "udp", netip.AddrPortFrom(authAddr, 53).String())
		if err != nil {
			return // no route at all: fine
		}
		defer c.Close()
		m := new(dns.Msg)
		m.SetQuestion("www.example.test.", dns.TypeA)
		dc := &dns.Client{Timeout: time.Second}
		if _, _, err := dc.ExchangeWithConn(m, &dns.Conn{Conn: c}); err == nil {
			t.Fatal("the sandbox reached the internet's DNS server directly")
		}
	})

	t.Run("transparent", func(t *testing.T) {
		useResolver(t, w.Sandbox, w.GatewaySandboxAddr)
		if got := getent(t, w.Sandbox, "www.example.test"); len(got) != 1 || got[0] != w.GatewaySandboxAddr {
			t.Errorf("allowed name resolves to %v, want only the gateway %s", got, w.GatewaySandboxAddr)
		}
		if got := getent(t, w.Sandbox, "sluice.internal"); len(got) != 1 || got[0] != w.GatewaySandboxAddr {
			t.Errorf("sluice.internal resolves to %v", got)
		}
		for _, name := range denied {
			if got := getent(t, w.Sandbox, name); got != nil {
				t.Errorf("%s resolves to %v, want a failure", name, got)
			}
		}
		// Over TCP as well, with a real client from the sandbox.
		c, err := w.Sandbox.DialContext(context.Background(), "tcp", netip.AddrPortFrom(w.GatewaySandboxAddr, 53).String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		dc := &dns.Client{Net: "tcp", Timeout: 3 * time.Second}
		conn := &dns.Conn{Conn: c}
		for _, name := range append([]string{"www.example.test"}, denied...) {
			m := new(dns.Msg)
			m.SetQuestion(dns.Fqdn(name), dns.TypeA)
			resp, _, err := dc.ExchangeWithConn(m, conn)
			if err != nil {
				t.Fatalf("tcp %s: %v", name, err)
			}
			wantOK := name == "www.example.test"
			if got := addrs(resp); wantOK != (len(got) == 1 && got[0] == w.GatewaySandboxAddr) || !wantOK && resp.Rcode != dns.RcodeRefused {
				t.Errorf("tcp %s: %s %v", name, dns.RcodeToString[resp.Rcode], got)
			}
		}
	})

	t.Run("explicit", func(t *testing.T) {
		useResolver(t, w.Sandbox, w.GatewaySandboxAddr6)
		for _, name := range append([]string{"www.example.test"}, denied...) {
			if got := getent(t, w.Sandbox, name); got != nil {
				t.Errorf("explicit mode resolved %s to %v", name, got)
			}
		}
		out, err := w.Sandbox.Run(t, "getent", "ahostsv6", "sluice.internal")
		if err != nil || !strings.Contains(out, w.GatewaySandboxAddr6.String()) {
			t.Errorf("sluice.internal in explicit mode: %q, %v", out, err)
		}
	})

	t.Run("the gateway resolves allowed names upstream itself", func(t *testing.T) {
		// What gateway/guard does for a CONNECT: its own lookup, from its own namespace.
		r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return w.Gateway.DialContext(ctx, network, netip.AddrPortFrom(authAddr, 53).String())
		}}
		got, err := r.LookupNetIP(context.Background(), "ip4", "www.example.test")
		if err != nil || len(got) != 1 || got[0] != realAddr {
			t.Fatalf("gateway lookup: %v, %v; want %s", got, err, realAddr)
		}
	})

	t.Run("nothing the sandbox asked reached the internet", func(t *testing.T) {
		qs := auth.queries()
		for _, q := range qs {
			if q.name != "www.example.test" || q.from != w.GatewayInternetAddr {
				t.Errorf("the internet's server saw %s %s from %s", dns.TypeToString[q.typ], q.name, q.from)
			}
		}
		if len(qs) == 0 {
			t.Error("the internet's server saw nothing at all: is it logging?")
		}
		for _, name := range denied {
			for _, q := range qs {
				if q.name == name {
					t.Errorf("%s reached the internet's server", name)
				}
			}
		}
	})

	t.Run("refusals are events, data redacted", func(t *testing.T) {
		var sawData, sawDenied bool
		for _, e := range events.all() {
			if strings.Contains(e.Host, "4a6f686e") || strings.Contains(e.Host, "mzxw6ytb") {
				t.Errorf("event keeps the data: %+v", e)
			}
			sawData = sawData || e.Reason == ReasonDataInName && e.Tenant == "acme" && e.Run == "run-1"
			sawDenied = sawDenied || e.Reason == "host-not-allowed" && e.Host == "evil.test"
		}
		if !sawData || !sawDenied {
			t.Errorf("events %+v: want data-in-name and host-not-allowed for acme", events.all())
		}
	})
}
