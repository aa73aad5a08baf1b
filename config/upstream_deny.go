package config

import (
	"fmt"
	"net/netip"
	"strings"
)

// DenyRanges returns upstream.deny parsed, for the guarded dialer's ExtraDeny: ranges
// refused besides the built-in deny list, never instead of it. An IPv4-mapped range
// means its IPv4 range. Entries that do not parse are left out (Validate reports them).
func (u Upstream) DenyRanges() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range u.Deny {
		if p, err := parseRange(s); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// parseRange parses a CIDR or a single address (its one-address range).
func parseRange(s string) (netip.Prefix, error) {
	s = strings.TrimSpace(s)
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("bad CIDR %q: want a range such as 198.51.100.0/24", s)
		}
		if p.Addr().Is4In6() {
			if p.Bits() < 96 {
				return netip.Prefix{}, fmt.Errorf("bad CIDR %q: IPv4-mapped prefix shorter than /96", s)
			}
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(strings.Trim(s, "[]"))
	if err != nil || a.Zone() != "" {
		return netip.Prefix{}, fmt.Errorf("bad address %q: want an IP or a CIDR such as 198.51.100.7 or 198.51.100.0/24", s)
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}
