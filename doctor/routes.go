package doctor

import (
	"fmt"
	"io"
	"net/netip"
	"os"

	"github.com/sluice-egress/sluice/gateway/guard"
)

// bridgeGateways are the IPv4 next hops of the default routes and, on a
// network without one (an internal Docker network), the first address of
// each directly connected subnet, where the bridge usually sits.
func (d Doctor) bridgeGateways() []netip.Addr {
	path := d.RouteFile
	if path == "" {
		path = "/proc/net/route"
	}
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	gws, err := parseBridgeGateways(f)
	if err != nil {
		return nil
	}
	return gws
}

// parseBridgeGateways reads a route table in /proc/net/route's format with
// guard's parser (the kernel's host byte order, as the guard reads it).
func parseBridgeGateways(r io.Reader) ([]netip.Addr, error) {
	routes, err := guard.ParseRoutesV4(r)
	if err != nil {
		return nil, fmt.Errorf("route table: %w", err)
	}
	var defaults, subnets []netip.Addr
	seen := map[netip.Addr]bool{}
	for _, rt := range routes {
		dst, gw := rt.Dst, rt.Gateway
		var a netip.Addr
		switch {
		case dst.IsUnspecified() && !gw.IsUnspecified():
			a = gw
		case gw.IsUnspecified() && !dst.IsUnspecified():
			bits := 0
			for _, b := range rt.Mask.As4() {
				for ; b != 0; b <<= 1 {
					bits++
				}
			}
			if bits == 0 || bits > 30 {
				continue
			}
			a = dst.Next()
		default:
			continue
		}
		// 255.255.255.255 has no next address: a hostile or broken table.
		if !a.IsValid() || seen[a] || a.IsLoopback() {
			continue
		}
		seen[a] = true
		if dst.IsUnspecified() {
			defaults = append(defaults, a)
		} else {
			subnets = append(subnets, a)
		}
	}
	if len(defaults) > 0 {
		return defaults, nil
	}
	return subnets, nil
}
