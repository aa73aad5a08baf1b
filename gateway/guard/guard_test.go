package guard

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeResolver is a hand-written Resolver for tests.
type fakeResolver struct {
	LookupFn func(ctx context.Context, network, host string) ([]netip.Addr, error)
}

func (r *fakeResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	return r.LookupFn(ctx, network, host)
}

// answer returns a resolver that always answers addrs, counting calls.
func answer(calls *atomic.Int32, addrs ...string) *fakeResolver {
	return &fakeResolver{LookupFn: func(_ context.Context, network, host string) ([]netip.Addr, error) {
		calls.Add(1)
		out := make([]netip.Addr, len(addrs))
		for i, s := range addrs {
			out[i] = netip.MustParseAddr(s)
		}
		return out, nil
	}}
}

// recorder is a DialFunc that dials nothing: it records the address and
// hands back one end of a pipe, or fails for the addresses in fail.
type recorder struct {
	mu    sync.Mutex
	addrs []string
	fail  map[string]bool
}

func (r *recorder) dial(_ context.Context, network, addr string) (net.Conn, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if network != "tcp" {
		return nil, errors.New("unexpected network " + network)
	}
	r.addrs = append(r.addrs, addr)
	if r.fail[addr] {
		return nil, errors.New("connection refused (fake)")
	}
	c1, c2 := net.Pipe()
	c2.Close()
	return c1, nil
}

func (r *recorder) dialed() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.addrs)
}

func noSelf() []netip.Addr { return nil }

var loopback4 = netip.MustParsePrefix("127.0.0.0/8")

// listener is a real TCP listener on a loopback address.
type listener struct {
	ln   *net.TCPListener
	addr netip.Addr
	port int
}

func mustListen(tb testing.TB, ip string) *listener {
	tb.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		tb.Fatalf("listen on %s: %v", ip, err)
	}
	tb.Cleanup(func() { ln.Close() })
	ap := netip.MustParseAddrPort(ln.Addr().String())
	return &listener{ln: ln.(*net.TCPListener), addr: ap.Addr(), port: int(ap.Port())}
}

// mustAccept returns the connection that reached the listener.
func (l *listener) mustAccept(tb testing.TB) net.Conn {
	tb.Helper()
	l.ln.SetDeadline(time.Now().Add(5 * time.Second))
	c, err := l.ln.Accept()
	if err != nil {
		tb.Fatalf("accept on %s: %v", l.addr, err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

// assertNoConnection fails if any connection reached the listener. A
// completed TCP handshake sits in the accept queue before connect returns,
// so once Dial has returned, a short deadline suffices.
func (l *listener) assertNoConnection(tb testing.TB) {
	tb.Helper()
	l.ln.SetDeadline(time.Now().Add(100 * time.Millisecond))
	c, err := l.ln.Accept()
	if err == nil {
		c.Close()
		tb.Fatalf("listener on %s:%d got a connection from %s; want none", l.addr, l.port, c.RemoteAddr())
	}
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		tb.Fatalf("accept: %v; want a timeout", err)
	}
}

// mustDenied asserts err is a refusal whose reason contains why.
func mustDenied(tb testing.TB, err error, why string) *DeniedError {
	tb.Helper()
	if !errors.Is(err, ErrAddressDenied) {
		tb.Fatalf("err = %v; want ErrAddressDenied", err)
	}
	var de *DeniedError
	if !errors.As(err, &de) {
		tb.Fatalf("err = %T %v; want *DeniedError", err, err)
	}
	if !strings.Contains(de.Why, why) {
		tb.Fatalf("Why = %q; want it to contain %q", de.Why, why)
	}
	return de
}

func TestDialAllowedLoopback(t *testing.T) {
	l := mustListen(t, "127.0.0.1")
	d := &Dialer{Deny: withoutPrefix(DefaultDeny(), loopback4), Self: noSelf} // real net.Dialer
	conn, err := d.Dial(t.Context(), Target{Host: "127.0.0.1", Port: l.port})
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	defer conn.Close()
	srv := l.mustAccept(t)
	if srv.RemoteAddr().String() != conn.LocalAddr().String() {
		t.Errorf("listener saw %s, dialer is %s", srv.RemoteAddr(), conn.LocalAddr())
	}
	if _, err := conn.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(srv, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("read %q, %v", buf, err)
	}
}

func TestDialDefaultDenyRefusesLoopback(t *testing.T) {
	l := mustListen(t, "127.0.0.1")
	tests := []struct {
		name, host, resolves, why string
	}{
		{"literal", "127.0.0.1", "", WhyLoopback},
		{"mapped literal", "::ffff:127.0.0.1", "", WhyLoopback},
		{"bracketed mapped literal", "[::ffff:127.0.0.1]", "", WhyLoopback},
		{"name", "localhost.test", "127.0.0.1", WhyLoopback},
		{"name to mapped", "mapped.test", "::ffff:127.0.0.1", WhyLoopback},
		{"name to other loopback", "lo2.test", "127.0.0.2", WhyLoopback},
		{"name to NAT64", "nat64.test", "64:ff9b::7f00:1", "loopback (IPv4 127.0.0.1 embedded in a NAT64 address)"},
		{"name to 6to4", "6to4.test", "2002:7f00:1::", "6to4"},
		{"name to IPv6 loopback", "lo6.test", "::1", WhyLoopback},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int32
			var dials atomic.Int32
			nd := &net.Dialer{Timeout: time.Second}
			d := &Dialer{
				Resolver: answer(&calls, tt.resolves),
				// A real dialer behind a counter: were the check to let the
				// address through, the listener would see the connection.
				DialFunc: func(ctx context.Context, network, addr string) (net.Conn, error) {
					dials.Add(1)
					return nd.DialContext(ctx, network, addr)
				},
			}
			if tt.resolves == "" {
				d.Resolver = &fakeResolver{LookupFn: func(context.Context, string, string) ([]netip.Addr, error) {
					t.Error("resolver called for an IP literal")
					return nil, errors.New("unexpected")
				}}
			}
			conn, err := d.Dial(t.Context(), Target{Host: tt.host, Port: l.port})
			if err == nil {
				conn.Close()
				t.Fatal("Dial succeeded; want refusal")
			}
			de := mustDenied(t, err, tt.why)
			if de.Host != tt.host {
				t.Errorf("DeniedError.Host = %q, want %q", de.Host, tt.host)
			}
			if n := dials.Load(); n != 0 {
				t.Errorf("DialFunc called %d times; want 0", n)
			}
			l.assertNoConnection(t)
		})
	}
}

// Even with loopback taken out of the deny ranges, the default Self still
// refuses 127.0.0.1: it is the gateway's own address.
func TestDialDefaultSelfRefusesOwnAddress(t *testing.T) {
	l := mustListen(t, "127.0.0.1")
	d := &Dialer{Deny: withoutPrefix(DefaultDeny(), loopback4)}
	_, err := d.Dial(t.Context(), Target{Host: "127.0.0.1", Port: l.port})
	de := mustDenied(t, err, WhySelf)
	if de.Range != netip.MustParsePrefix("127.0.0.1/32") {
		t.Errorf("Range = %s, want 127.0.0.1/32", de.Range)
	}
	l.assertNoConnection(t)
}

func TestDialSelf(t *testing.T) {
	self := func() []netip.Addr {
		return []netip.Addr{netip.MustParseAddr("198.51.100.9"), netip.MustParseAddr("2001:db8::9%eth0")}
	}
	tests := []struct {
		name, host string
		denied     bool
	}{
		{"own v4", "198.51.100.9", true},
		{"own v4 mapped", "::ffff:198.51.100.9", true},
		{"own v4 via NAT64", "64:ff9b::c633:6409", true},
		{"own v4 via 6to4", "2002:c633:6409::1", true},
		{"own v6", "2001:db8::9", true},
		{"own v6 with zone", "2001:db8::9%eth1", true},
		{"neighbour v4", "198.51.100.10", false},
		{"neighbour v6", "2001:db8::a", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{}
			d := &Dialer{Self: self, DialFunc: rec.dial}
			allowAll := []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0"), netip.MustParsePrefix("::/0")}
			conn, err := d.Dial(t.Context(), Target{Host: tt.host, Port: 443, Allow: allowAll})
			if !tt.denied {
				if err != nil {
					t.Fatalf("Dial: %v", err)
				}
				conn.Close()
				return
			}
			mustDenied(t, err, WhySelf)
			if got := rec.dialed(); len(got) != 0 {
				t.Errorf("dialed %v; want nothing", got)
			}
		})
	}
}

func TestDialHostsBeforeResolver(t *testing.T) {
	l := mustListen(t, "127.0.0.1")
	var calls atomic.Int32
	d := &Dialer{
		Resolver: answer(&calls, "10.0.0.1"),
		Hosts:    map[string]netip.Addr{"mirror.internal.test": netip.MustParseAddr("127.0.0.1")},
		Deny:     withoutPrefix(DefaultDeny(), loopback4),
		Self:     noSelf,
	}
	for _, host := range []string{"mirror.internal.test", "MIRROR.internal.test."} {
		conn, err := d.Dial(t.Context(), Target{Host: host, Port: l.port})
		if err != nil {
			t.Fatalf("Dial %s: %v", host, err)
		}
		conn.Close()
		l.mustAccept(t)
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("resolver called %d times; want 0 (Hosts first)", n)
	}
	// A name not in Hosts goes to the resolver, whose private answer is refused.
	_, err := d.Dial(t.Context(), Target{Host: "other.internal.test", Port: l.port})
	mustDenied(t, err, WhyPrivate)
	if n := calls.Load(); n != 1 {
		t.Errorf("resolver called %d times; want 1", n)
	}
}

// Static entries are checked like DNS answers.
func TestDialHostsChecked(t *testing.T) {
	rec := &recorder{}
	d := &Dialer{
		Hosts:    map[string]netip.Addr{"mirror.internal.test": netip.MustParseAddr("10.0.0.5"), "bad.test": {}},
		Self:     noSelf,
		DialFunc: rec.dial,
	}
	_, err := d.Dial(t.Context(), Target{Host: "mirror.internal.test", Port: 443})
	mustDenied(t, err, WhyPrivate)
	_, err = d.Dial(t.Context(), Target{Host: "bad.test", Port: 443})
	mustDenied(t, err, WhyInvalid)
	conn, err := d.Dial(t.Context(), Target{Host: "mirror.internal.test", Port: 443, Allow: []netip.Prefix{netip.MustParsePrefix("10.0.0.5/32")}})
	if err != nil {
		t.Fatalf("Dial with Allow: %v", err)
	}
	conn.Close()
	if got, want := rec.dialed(), []string{"10.0.0.5:443"}; !slices.Equal(got, want) {
		t.Errorf("dialed %v, want %v", got, want)
	}
}

// A name that answers differently each time is resolved once per Dial, and
// the dialer receives exactly the literal that was checked.
func TestDialRebinding(t *testing.T) {
	answers := []string{"198.51.100.7", "127.0.0.1", "169.254.169.254"}
	var calls atomic.Int32
	res := &fakeResolver{LookupFn: func(_ context.Context, network, host string) ([]netip.Addr, error) {
		n := calls.Add(1)
		return []netip.Addr{netip.MustParseAddr(answers[(int(n)-1)%len(answers)])}, nil
	}}
	rec := &recorder{}
	d := &Dialer{Resolver: res, Self: noSelf, DialFunc: rec.dial}

	conn, err := d.Dial(t.Context(), Target{Host: "rebind.test", Port: 443})
	if err != nil {
		t.Fatalf("first Dial: %v", err)
	}
	conn.Close()
	if n := calls.Load(); n != 1 {
		t.Fatalf("resolver called %d times; want exactly 1", n)
	}
	if got, want := rec.dialed(), []string{"198.51.100.7:443"}; !slices.Equal(got, want) {
		t.Fatalf("dialed %v; want %v (the checked literal, never the name)", got, want)
	}

	for i, why := range []string{WhyLoopback, WhyMetadata} {
		_, err = d.Dial(t.Context(), Target{Host: "rebind.test", Port: 443})
		mustDenied(t, err, why)
		if n := calls.Load(); n != int32(i+2) {
			t.Fatalf("resolver called %d times; want %d", n, i+2)
		}
	}
	if got := rec.dialed(); len(got) != 1 {
		t.Errorf("dialed %v; want only the first, checked address", got)
	}
}

func TestDialMixedAnswerRefused(t *testing.T) {
	tests := []struct {
		name    string
		answers []string
		why     string
	}{
		{"public then private", []string{"198.51.100.7", "10.0.0.5"}, WhyPrivate},
		{"private then public", []string{"10.0.0.5", "198.51.100.7"}, WhyPrivate},
		{"v6 public, mapped private", []string{"2001:db8::1", "::ffff:192.168.0.1"}, WhyPrivate},
		{"public and NAT64 metadata", []string{"198.51.100.7", "64:ff9b::a9fe:a9fe"}, WhyMetadata},
		{"public and link-local with zone", []string{"203.0.113.9", "fe80::1%eth0"}, WhyLinkLocal},
		{"public and unspecified", []string{"203.0.113.9", "::"}, WhyUnspecified},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int32
			rec := &recorder{}
			d := &Dialer{Resolver: answer(&calls, tt.answers...), Self: noSelf, DialFunc: rec.dial}
			_, err := d.Dial(t.Context(), Target{Host: "mixed.test", Port: 443})
			mustDenied(t, err, tt.why)
			if got := rec.dialed(); len(got) != 0 {
				t.Errorf("dialed %v; want nothing (no cherry-picking)", got)
			}
		})
	}
}

func TestDialAllow(t *testing.T) {
	pfx := func(ss ...string) []netip.Prefix {
		var ps []netip.Prefix
		for _, s := range ss {
			ps = append(ps, netip.MustParsePrefix(s))
		}
		return ps
	}
	tests := []struct {
		name     string
		allow    []netip.Prefix
		answers  []string
		wantDial []string // nil: refused with wantWhy
		wantWhy  string
	}{
		{"listed address", pfx("10.0.0.5/32"), []string{"10.0.0.5"}, []string{"10.0.0.5:443"}, ""},
		{"listed address mapped", pfx("10.0.0.5/32"), []string{"::ffff:10.0.0.5"}, []string{"10.0.0.5:443"}, ""},
		{"listed address as mapped prefix", pfx("::ffff:10.0.0.5/128"), []string{"10.0.0.5"}, []string{"10.0.0.5:443"}, ""},
		{"listed address via NAT64", pfx("10.0.0.5/32"), []string{"64:ff9b::a00:5"}, []string{"[64:ff9b::a00:5]:443"}, ""},
		{"neighbour", pfx("10.0.0.5/32"), []string{"10.0.0.6"}, nil, WhyPrivate},
		{"listed plus neighbour", pfx("10.0.0.5/32"), []string{"10.0.0.5", "10.0.0.6"}, nil, WhyPrivate},
		{"other private range", pfx("10.0.0.0/8"), []string{"192.168.0.5"}, nil, WhyPrivate},
		{"metadata via link-local range", pfx("169.254.0.0/16"), []string{"169.254.169.254"}, nil, WhyMetadata},
		{"metadata listed", pfx("169.254.169.254/32"), []string{"169.254.169.254"}, nil, WhyMetadata},
		{"v6 metadata via ULA range", pfx("fd00::/8"), []string{"fd00:ec2::254"}, nil, WhyMetadata},
		{"metadata via NAT64", pfx("0.0.0.0/0", "::/0"), []string{"64:ff9b::a9fe:a9fe"}, nil, WhyMetadata},
		{"own address", pfx("0.0.0.0/0", "::/0"), []string{"10.9.9.9"}, nil, WhySelf},
		{"unspecified", pfx("0.0.0.0/0", "::/0"), []string{"0.0.0.0"}, nil, WhyUnspecified},
		{"link-local listed", pfx("169.254.10.0/24"), []string{"169.254.10.1"}, []string{"169.254.10.1:443"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int32
			rec := &recorder{}
			d := &Dialer{
				Resolver: answer(&calls, tt.answers...),
				Self:     func() []netip.Addr { return []netip.Addr{netip.MustParseAddr("10.9.9.9")} },
				DialFunc: rec.dial,
			}
			conn, err := d.Dial(t.Context(), Target{Host: "mirror.internal.test", Port: 443, Allow: tt.allow})
			if tt.wantDial == nil {
				mustDenied(t, err, tt.wantWhy)
			} else if err != nil {
				t.Fatalf("Dial: %v", err)
			} else {
				conn.Close()
			}
			if got := rec.dialed(); !slices.Equal(got, tt.wantDial) {
				t.Errorf("dialed %v; want %v", got, tt.wantDial)
			}
		})
	}
}

// Allow with real listeners: the listed loopback address is reached, its
// neighbour is refused and sees nothing.
func TestDialAllowLoopbackListeners(t *testing.T) {
	l1 := mustListen(t, "127.0.0.1")
	l2 := mustListen(t, "127.0.0.2")
	d := &Dialer{Self: noSelf}
	allow := []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	conn, err := d.Dial(t.Context(), Target{Host: "127.0.0.1", Port: l1.port, Allow: allow})
	if err != nil {
		t.Fatalf("Dial listed address: %v", err)
	}
	conn.Close()
	l1.mustAccept(t)
	_, err = d.Dial(t.Context(), Target{Host: "127.0.0.2", Port: l2.port, Allow: allow})
	mustDenied(t, err, WhyLoopback)
	l2.assertNoConnection(t)
}

func TestDialTriesInOrder(t *testing.T) {
	var calls atomic.Int32
	rec := &recorder{fail: map[string]bool{"198.51.100.1:443": true, "[2001:db8::1]:443": true}}
	d := &Dialer{
		Resolver: answer(&calls, "198.51.100.1", "2001:db8::1", "198.51.100.1", "198.51.100.2", "198.51.100.3"),
		Self:     noSelf,
		DialFunc: rec.dial,
	}
	conn, err := d.Dial(t.Context(), Target{Host: "multi.test", Port: 443})
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	conn.Close()
	want := []string{"198.51.100.1:443", "[2001:db8::1]:443", "198.51.100.2:443"}
	if got := rec.dialed(); !slices.Equal(got, want) {
		t.Errorf("dialed %v; want %v (in order, duplicates once, stop at first success)", got, want)
	}

	rec = &recorder{fail: map[string]bool{"198.51.100.1:443": true, "198.51.100.2:443": true}}
	d = &Dialer{Resolver: answer(&calls, "198.51.100.1", "198.51.100.2"), Self: noSelf, DialFunc: rec.dial}
	_, err = d.Dial(t.Context(), Target{Host: "down.test", Port: 443})
	if err == nil || errors.Is(err, ErrAddressDenied) || !strings.Contains(err.Error(), "down.test") {
		t.Fatalf("err = %v; want a dial error naming the host", err)
	}
	if got := rec.dialed(); len(got) != 2 {
		t.Errorf("dialed %v; want both addresses tried", got)
	}
}

func TestDialErrors(t *testing.T) {
	errNX := errors.New("no such host (fake)")
	tests := []struct {
		name   string
		target Target
		lookup func(context.Context, string, string) ([]netip.Addr, error)
		want   string
		is     error
	}{
		{"port zero", Target{Host: "198.51.100.7"}, nil, "invalid port 0", nil},
		{"port too big", Target{Host: "198.51.100.7", Port: 65536}, nil, "invalid port", nil},
		{"empty host", Target{Port: 443}, nil, "empty host", nil},
		{"dns error", Target{Host: "nx.test", Port: 443},
			func(context.Context, string, string) ([]netip.Addr, error) { return nil, errNX },
			"resolve nx.test", errNX},
		{"empty answer", Target{Host: "empty.test", Port: 443},
			func(context.Context, string, string) ([]netip.Addr, error) { return nil, nil },
			"resolve empty.test: no addresses", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{}
			lookup := tt.lookup
			if lookup == nil {
				lookup = func(context.Context, string, string) ([]netip.Addr, error) {
					t.Error("resolver called")
					return nil, errors.New("unexpected")
				}
			}
			d := &Dialer{Resolver: &fakeResolver{LookupFn: lookup}, Self: noSelf, DialFunc: rec.dial}
			_, err := d.Dial(t.Context(), tt.target)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v; want it to contain %q", err, tt.want)
			}
			if errors.Is(err, ErrAddressDenied) {
				t.Errorf("err = %v is ErrAddressDenied; want a plain error", err)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("err = %v; want it to wrap %v", err, tt.is)
			}
			if got := rec.dialed(); len(got) != 0 {
				t.Errorf("dialed %v; want nothing", got)
			}
		})
	}
}

func TestDeniedErrorMessage(t *testing.T) {
	var calls atomic.Int32
	var logs bytes.Buffer
	d := &Dialer{
		Resolver: answer(&calls, "169.254.169.254"),
		Self:     noSelf,
		DialFunc: (&recorder{}).dial,
		Logger:   slog.New(slog.NewTextHandler(&logs, nil)),
	}
	_, err := d.Dial(t.Context(), Target{Host: "meta.test", Port: 80})
	de := mustDenied(t, err, WhyMetadata)
	for _, want := range []string{"meta.test", "169.254.169.254", WhyMetadata} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Error() = %q; want it to mention %q", err, want)
		}
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log = %q; want it to mention %q", logs.String(), want)
		}
	}
	if de.Addr != netip.MustParseAddr("169.254.169.254") || de.Range != netip.MustParsePrefix("169.254.169.254/32") {
		t.Errorf("DeniedError = %+v", de)
	}
	lit := (&DeniedError{Host: "127.0.0.1", Addr: netip.MustParseAddr("127.0.0.1"), Why: WhyLoopback}).Error()
	if want := "guard: address 127.0.0.1 not allowed: loopback"; lit != want {
		t.Errorf("Error() = %q; want %q", lit, want)
	}
}

func TestCheckReturnsNormalised(t *testing.T) {
	var calls atomic.Int32
	d := &Dialer{Resolver: answer(&calls, "::ffff:198.51.100.7", "2001:db8::1%eth0", "198.51.100.7"), Self: noSelf}
	got, err := d.Check(t.Context(), Target{Host: "n.test", Port: 443})
	if err != nil {
		t.Fatal(err)
	}
	want := []netip.Addr{netip.MustParseAddr("198.51.100.7"), netip.MustParseAddr("2001:db8::1")}
	if !slices.Equal(got, want) {
		t.Errorf("Check = %v; want %v", got, want)
	}
}

// BenchmarkDialCheck measures what the guard adds to a dial: Hosts lookup,
// normalisation, deny, Self and Allow checks. The dial itself is a stub.
func BenchmarkDialCheck(b *testing.B) {
	stub := &stubConn{}
	d := &Dialer{
		Hosts: map[string]netip.Addr{"mirror.internal.test": netip.MustParseAddr("2001:db8::7")},
		Self: func() []netip.Addr {
			return []netip.Addr{netip.MustParseAddr("10.0.0.2"), netip.MustParseAddr("172.17.0.1"), netip.MustParseAddr("fe80::1")}
		},
		DialFunc: func(context.Context, string, string) (net.Conn, error) { return stub, nil },
	}
	t := Target{Host: "mirror.internal.test", Port: 443, Allow: []netip.Prefix{netip.MustParsePrefix("10.0.0.5/32")}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.Dial(ctx, t); err != nil {
			b.Fatal(err)
		}
	}
}

type stubConn struct{ net.Conn }

func TestPortFormatting(t *testing.T) {
	// Guard against dialing a name: every address handed to DialFunc must
	// parse as an IP literal and port.
	var calls atomic.Int32
	var got []string
	d := &Dialer{
		Resolver: answer(&calls, "198.51.100.7", "2001:db8::1"),
		Self:     noSelf,
		DialFunc: func(_ context.Context, _, addr string) (net.Conn, error) {
			got = append(got, addr)
			return nil, errors.New("fake")
		},
	}
	d.Dial(t.Context(), Target{Host: "x.test", Port: 8443})
	for _, a := range got {
		ap, err := netip.ParseAddrPort(a)
		if err != nil || strconv.Itoa(int(ap.Port())) != "8443" {
			t.Errorf("DialFunc got %q; want an IP literal with port 8443", a)
		}
	}
	if len(got) != 2 {
		t.Errorf("DialFunc got %v; want two addresses", got)
	}
}

// ExtraDeny adds ranges to the defaults (what config's upstream.deny sets):
// the added range is refused, the default ranges stay refused, an entry's
// Allow re-opens an added range as it re-opens a default one, and an
// ISATAP spelling of an added IPv4 range is refused too.
func TestDialExtraDeny(t *testing.T) {
	extra := []netip.Prefix{netip.MustParsePrefix("198.51.100.0/24"), netip.MustParsePrefix("2001:db8:aa::/48")}
	tests := []struct {
		name    string
		answer  string
		allow   []netip.Prefix
		wantWhy string // "": dialed
	}{
		{"added v4 range", "198.51.100.7", nil, "in deny range 198.51.100.0/24"},
		{"added v6 range", "2001:db8:aa::1", nil, "in deny range 2001:db8:aa::/48"},
		{"added range via ISATAP", "2001:db8:1:2:0:5efe:c633:6407", nil, "in deny range 198.51.100.0/24"},
		{"added range via NAT64", "64:ff9b::c633:6407", nil, "in deny range 198.51.100.0/24"},
		{"default still refused", "10.1.2.3", nil, WhyPrivate},
		{"loopback still refused", "127.0.0.1", nil, WhyLoopback},
		{"outside every range", "198.51.101.7", nil, ""},
		{"re-opened by the entry", "198.51.100.7", []netip.Prefix{netip.MustParsePrefix("198.51.100.7/32")}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int32
			rec := &recorder{}
			d := &Dialer{
				Resolver:  answer(&calls, tt.answer),
				ExtraDeny: extra,
				Self:      func() []netip.Addr { return nil },
				DialFunc:  rec.dial,
			}
			conn, err := d.Dial(t.Context(), Target{Host: "up.example.test", Port: 443, Allow: tt.allow})
			if tt.wantWhy != "" {
				mustDenied(t, err, tt.wantWhy)
				if n := len(rec.dialed()); n != 0 {
					t.Errorf("dialed %d addresses of a refused host", n)
				}
				return
			}
			if err != nil {
				t.Fatalf("Dial: %v", err)
			}
			conn.Close()
		})
	}
}
