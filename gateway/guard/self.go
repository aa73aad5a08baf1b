package guard

import (
	"bufio"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

// selfRefresh bounds how often the machine's own addresses are listed again:
// often enough to see an interface that comes up, rarely enough to stay off
// the hot path.
const selfRefresh = 5 * time.Second

// selfSource discovers this machine's own addresses. Its funcs are the OS
// seam: tests replace them.
type selfSource struct {
	interfaceAddrs func() ([]net.Addr, error)
	readFile       func(name string) ([]byte, error)
	now            func() time.Time
	routeV4        string // /proc/net/route
	routeV6        string // /proc/net/ipv6_route

	mu    sync.Mutex
	at    time.Time
	addrs []netip.Addr
}

// machineSelf is shared by every Dialer whose Self is nil: the machine's
// addresses are the same for all of them.
var machineSelf = &selfSource{
	interfaceAddrs: net.InterfaceAddrs,
	readFile:       os.ReadFile,
	now:            time.Now,
	routeV4:        "/proc/net/route",
	routeV6:        "/proc/net/ipv6_route",
}

// alwaysSelf are the gateway's own addresses even in a namespace whose
// loopback interface is down or unlisted.
var alwaysSelf = []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")}

// get returns the cached addresses, listing them again when they are older
// than selfRefresh. If listing fails, the previous list is kept; if there is
// none, the error is returned and the caller fails closed.
func (s *selfSource) get() ([]netip.Addr, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if s.addrs != nil && now.Sub(s.at) < selfRefresh {
		return s.addrs, nil
	}
	addrs, err := s.discover()
	if err != nil {
		if s.addrs != nil {
			return s.addrs, nil
		}
		return nil, err
	}
	s.addrs, s.at = addrs, now
	return addrs, nil
}

// discover lists the interface addresses and the default-route gateways.
func (s *selfSource) discover() ([]netip.Addr, error) {
	ifAddrs, err := s.interfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("guard: list own addresses: %w", err)
	}
	out := append([]netip.Addr(nil), alwaysSelf...)
	for _, ia := range ifAddrs {
		var ip net.IP
		switch v := ia.(type) {
		case *net.IPNet:
			ip = v.IP
		case *net.IPAddr:
			ip = v.IP
		}
		if a, ok := netip.AddrFromSlice(ip); ok {
			out = append(out, normalise(a))
		}
	}
	for _, rf := range []struct {
		path  string
		parse func(io.Reader) ([]netip.Addr, error)
	}{{s.routeV4, parseRouteV4}, {s.routeV6, parseRouteV6}} {
		b, err := s.readFile(rf.path)
		if errors.Is(err, fs.ErrNotExist) {
			continue // not Linux, or no IPv6: nothing to add
		}
		if err != nil {
			return nil, fmt.Errorf("guard: read routes: %w", err)
		}
		gws, err := rf.parse(strings.NewReader(string(b)))
		if err != nil {
			return nil, fmt.Errorf("guard: parse %s: %w", rf.path, err)
		}
		out = append(out, gws...)
	}
	return dedupe(out), nil
}

// dedupe drops repeated addresses in place, keeping the first of each. The
// lists are short (a DNS answer, a machine's addresses): a linear scan beats
// a map.
func dedupe(as []netip.Addr) []netip.Addr {
	out := as[:0]
	for _, a := range as {
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// parseRouteV4 returns the gateways of the default routes of /proc/net/route
// (see ParseRoutesV4).
func parseRouteV4(r io.Reader) ([]netip.Addr, error) {
	routes, err := ParseRoutesV4(r)
	if err != nil {
		return nil, err
	}
	var out []netip.Addr
	for _, rt := range routes {
		if rt.IsDefaultGateway() {
			out = append(out, rt.Gateway)
		}
	}
	return out, nil
}

// parseRouteV6 returns the next hops of the default routes in the format of
// /proc/net/ipv6_route: fields dest(32 hex) dest_len(2 hex) src src_len
// next_hop(32 hex) metric refcnt use flags iface.
func parseRouteV6(r io.Reader) ([]netip.Addr, error) {
	var out []netip.Addr
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 10 {
			continue
		}
		if f[1] != "00" || strings.Trim(f[0], "0") != "" {
			continue // not a default route
		}
		b, err := hex.DecodeString(f[4])
		if err != nil || len(b) != 16 {
			return nil, fmt.Errorf("bad next hop %q", f[4])
		}
		a := netip.AddrFrom16([16]byte(b))
		if a.IsUnspecified() {
			continue
		}
		out = append(out, normalise(a))
	}
	return out, sc.Err()
}
