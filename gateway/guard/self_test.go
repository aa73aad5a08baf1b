package guard

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// The default Self holds 127.0.0.1 and every address of this machine's
// interfaces.
func TestDefaultSelf(t *testing.T) {
	// Other tests (namespaces, containers) add and remove interfaces while
	// this one runs: only addresses present before and after must be in Self.
	before, _ := net.InterfaceAddrs()
	// The machine's list is cached for selfRefresh: an interface another
	// test added within that time is in before but not in the cached list.
	// Expire it, so that the list is taken after before.
	machineSelf.mu.Lock()
	machineSelf.at = time.Time{}
	machineSelf.mu.Unlock()
	got, err := (&Dialer{}).self()
	if err != nil {
		t.Fatalf("self: %v", err)
	}
	if !slices.Contains(got, netip.MustParseAddr("127.0.0.1")) {
		t.Errorf("default Self %v lacks 127.0.0.1", got)
	}
	ifAddrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	if len(ifAddrs) == 0 {
		t.Fatal("no interface addresses on this machine")
	}
	for _, ia := range ifAddrs {
		ipn, ok := ia.(*net.IPNet)
		if !ok {
			continue
		}
		a, _ := netip.AddrFromSlice(ipn.IP)
		stable := slices.ContainsFunc(before, func(b net.Addr) bool { return b.String() == ia.String() })
		if stable && !slices.Contains(got, a.Unmap()) {
			t.Errorf("default Self %v lacks interface address %s", got, a)
		}
	}
	// And the default-route gateway(s), where the kernel lists them.
	if b, err := os.ReadFile("/proc/net/route"); err == nil {
		gws, err := parseRouteV4(strings.NewReader(string(b)))
		if err != nil {
			t.Fatal(err)
		}
		for _, gw := range gws {
			if !slices.Contains(got, gw) {
				t.Errorf("default Self %v lacks default gateway %s", got, gw)
			}
		}
	}
}

// routeHex spells a in /proc/net/route's host byte order.
func routeHex(a string) string {
	b := netip.MustParseAddr(a).As4()
	return fmt.Sprintf("%08X", binary.NativeEndian.Uint32(b[:]))
}

func TestParseRouteV4(t *testing.T) {
	text := "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n" +
		fmt.Sprintf("eth0\t00000000\t%s\t0003\t0\t0\t0\t00000000\t0\t0\t0\n", routeHex("172.17.0.1")) +
		fmt.Sprintf("eth0\t%s\t00000000\t0001\t0\t0\t0\t%s\t0\t0\t0\n", routeHex("172.17.0.0"), routeHex("255.255.0.0")) +
		// A gateway route that is not the default: not ours to deny.
		fmt.Sprintf("eth1\t%s\t%s\t0003\t0\t0\t0\t%s\t0\t0\t0\n", routeHex("10.8.0.0"), routeHex("10.0.0.254"), routeHex("255.255.0.0")) +
		fmt.Sprintf("eth1\t00000000\t%s\t0003\t0\t0\t100\t00000000\t0\t0\t0\n", routeHex("192.168.1.1"))
	got, err := parseRouteV4(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	want := []netip.Addr{netip.MustParseAddr("172.17.0.1"), netip.MustParseAddr("192.168.1.1")}
	if !slices.Equal(got, want) {
		t.Errorf("parseRouteV4 = %v; want %v", got, want)
	}
	if _, err := parseRouteV4(strings.NewReader("header\neth0 XYZ 00000000 0003 0 0 0 00000000\n")); err == nil {
		t.Error("parseRouteV4 accepted a bad destination")
	}
}

func TestParseRouteV6(t *testing.T) {
	zero := strings.Repeat("0", 32)
	text := "" +
		// default via fe80::1
		zero + " 00 " + zero + " 00 fe800000000000000000000000000001 00000400 00000001 00000000 00450003     eth0\n" +
		// default without next hop (unreachable/lo): skipped
		zero + " 00 " + zero + " 00 " + zero + " ffffffff 00000001 00000000 00200200       lo\n" +
		// a prefix route
		"20010db8000000000000000000000000 40 " + zero + " 00 " + zero + " 00000100 00000001 00000000 00000001     eth0\n"
	got, err := parseRouteV6(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if want := []netip.Addr{netip.MustParseAddr("fe80::1")}; !slices.Equal(got, want) {
		t.Errorf("parseRouteV6 = %v; want %v", got, want)
	}
	if _, err := parseRouteV6(strings.NewReader(zero + " 00 " + zero + " 00 zz 0 0 0 0 eth0\n")); err == nil {
		t.Error("parseRouteV6 accepted a bad next hop")
	}
}

// fakeSource is a selfSource with a clock and interface list under test control.
func fakeSource(t *testing.T, clock *time.Time, calls *int, err *error) *selfSource {
	t.Helper()
	return &selfSource{
		interfaceAddrs: func() ([]net.Addr, error) {
			*calls++
			if *err != nil {
				return nil, *err
			}
			return []net.Addr{
				&net.IPNet{IP: net.ParseIP("10.0.0.2"), Mask: net.CIDRMask(24, 32)},
				&net.IPNet{IP: net.ParseIP("::ffff:10.0.0.3"), Mask: net.CIDRMask(120, 128)},
			}, nil
		},
		readFile: func(name string) ([]byte, error) {
			if name == "route" {
				return []byte(fmt.Sprintf("hdr\neth0 00000000 %s 0003 0 0 0 00000000\n", routeHex("10.0.0.1"))), nil
			}
			return nil, fs.ErrNotExist
		},
		now:     func() time.Time { return *clock },
		routeV4: "route",
		routeV6: "ipv6_route",
	}
}

func TestSelfSourceRefresh(t *testing.T) {
	clock := time.Unix(1_700_000_000, 0)
	calls := 0
	var listErr error
	s := fakeSource(t, &clock, &calls, &listErr)

	got, err := s.get()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"127.0.0.1", "::1", "10.0.0.2", "10.0.0.3", "10.0.0.1"} {
		if !slices.Contains(got, netip.MustParseAddr(want)) {
			t.Errorf("self = %v; lacks %s", got, want)
		}
	}
	clock = clock.Add(4 * time.Second)
	s.get()
	if calls != 1 {
		t.Errorf("listed %d times within 5s; want 1", calls)
	}
	clock = clock.Add(2 * time.Second)
	s.get()
	if calls != 2 {
		t.Errorf("listed %d times after 6s; want 2", calls)
	}
	// A failed refresh keeps the previous list.
	listErr = errors.New("netlink down (fake)")
	clock = clock.Add(10 * time.Second)
	if got, err := s.get(); err != nil || !slices.Contains(got, netip.MustParseAddr("10.0.0.2")) {
		t.Errorf("after failed refresh: %v, %v; want the previous list", got, err)
	}
}

// Without its own addresses the dialer cannot tell what to refuse: it fails
// closed and dials nothing.
func TestDialFailsClosedWithoutSelf(t *testing.T) {
	clock := time.Now()
	calls := 0
	listErr := errors.New("netlink down (fake)")
	saved := machineSelf
	machineSelf = fakeSource(t, &clock, &calls, &listErr)
	t.Cleanup(func() { machineSelf = saved })

	rec := &recorder{}
	d := &Dialer{DialFunc: rec.dial}
	_, err := d.Dial(t.Context(), Target{Host: "198.51.100.7", Port: 443})
	if err == nil || !strings.Contains(err.Error(), "own addresses") {
		t.Fatalf("err = %v; want a failure to list own addresses", err)
	}
	if got := rec.dialed(); len(got) != 0 {
		t.Errorf("dialed %v; want nothing", got)
	}
}
