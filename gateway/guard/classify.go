package guard

import (
	"fmt"
	"net/netip"
)

// knownRange names a special-purpose address block so that a refusal can say
// why in words an operator recognises.
type knownRange struct {
	prefix netip.Prefix
	why    string
}

// Reasons given in DeniedError.Why. Tests and log readers match on them.
const (
	WhyUnspecified = "unspecified address"
	WhyLoopback    = "loopback"
	WhyPrivate     = "private (RFC 1918)"
	WhyMetadata    = "cloud metadata"
	WhySelf        = "gateway's own address"
	WhyLinkLocal   = "link-local"
	WhyInvalid     = "invalid address"
)

// denyRanges is DefaultDeny with a reason per range. Addresses that only a
// host on the same machine, the same private network or the cloud provider's
// fabric can reach have no business being an upstream of an egress gateway:
// reaching them is how a sandbox would talk to the gateway's admin port, the
// container bridge, a neighbour's service or the metadata server.
//
// Deliberately NOT denied: the documentation ranges 192.0.2.0/24 (TEST-NET-1),
// 198.51.100.0/24 (TEST-NET-2), 203.0.113.0/24 (TEST-NET-3) (RFC 5737),
// 2001:db8::/32 (RFC 3849) and 3fff::/20 (RFC 9637). They are never routed on
// the internet, so allowing them opens nothing real, and tests and examples
// place fake upstreams there (inside network namespaces); denying them would
// force tests to re-open private space, which is what must stay shut.
var denyRanges = []knownRange{
	// IPv4 (RFC 6890 and its updates).
	{netip.MustParsePrefix("0.0.0.0/8"), "this network (RFC 791)"},
	{netip.MustParsePrefix("10.0.0.0/8"), WhyPrivate},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared address space (CGNAT, RFC 6598)"},
	{netip.MustParsePrefix("127.0.0.0/8"), WhyLoopback},
	{netip.MustParsePrefix("169.254.0.0/16"), WhyLinkLocal},
	{netip.MustParsePrefix("172.16.0.0/12"), WhyPrivate},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignments (RFC 6890)"},
	{netip.MustParsePrefix("192.88.99.0/24"), "6to4 relay anycast (deprecated, RFC 7526)"},
	{netip.MustParsePrefix("192.168.0.0/16"), WhyPrivate},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking (RFC 2544)"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved (RFC 1112)"},
	{netip.MustParsePrefix("255.255.255.255/32"), "broadcast"},
	// IPv6 (RFC 6890, IANA special-purpose registry).
	{netip.MustParsePrefix("::/128"), WhyUnspecified},
	{netip.MustParsePrefix("::1/128"), WhyLoopback},
	{netip.MustParsePrefix("100::/64"), "discard-only (RFC 6666)"},
	{netip.MustParsePrefix("2001::/23"), "IETF special-purpose (RFC 2928, includes Teredo)"},
	{netip.MustParsePrefix("fc00::/7"), "unique local (RFC 4193)"},
	{netip.MustParsePrefix("fe80::/10"), WhyLinkLocal},
	{netip.MustParsePrefix("fec0::/10"), "site-local (deprecated, RFC 3879)"},
	{netip.MustParsePrefix("ff00::/8"), "multicast"},
}

// hardDeny lists addresses that are refused whatever Deny and Target.Allow
// say: no internal mirror lives at the unspecified address (which the kernel
// turns into "this host") or at a metadata server, and the metadata server
// hands out the credentials of the machine the gateway runs on.
var hardDeny = []knownRange{
	{netip.MustParsePrefix("0.0.0.0/32"), WhyUnspecified},
	{netip.MustParsePrefix("::/128"), WhyUnspecified},
	// AWS, GCP, Azure, OCI, DigitalOcean, OpenStack.
	{netip.MustParsePrefix("169.254.169.254/32"), WhyMetadata},
	// AWS ECS task metadata and credentials.
	{netip.MustParsePrefix("169.254.170.2/32"), WhyMetadata},
	// AWS IMDS over IPv6 (Nitro).
	{netip.MustParsePrefix("fd00:ec2::254/128"), WhyMetadata},
	// GCP metadata server over IPv6.
	{netip.MustParsePrefix("fd20:ce::254/128"), WhyMetadata},
	// Alibaba Cloud.
	{netip.MustParsePrefix("100.100.100.200/32"), WhyMetadata},
	// Oracle Cloud Classic.
	{netip.MustParsePrefix("192.0.0.192/32"), WhyMetadata},
}

// defaultDeny is what a nil Deny means; shared read-only.
var defaultDeny = func() []netip.Prefix {
	p := make([]netip.Prefix, len(denyRanges))
	for i, r := range denyRanges {
		p[i] = r.prefix
	}
	return p
}()

// DefaultDeny returns the ranges a Dialer refuses when its Deny is nil: the
// special-purpose IPv4 and IPv6 blocks (loopback, RFC 1918, CGNAT, link-local
// and metadata, benchmarking, multicast, reserved, unique local, discard,
// IETF special-purpose including Teredo). The documentation ranges are
// allowed; see denyRanges for why. The caller owns the returned slice.
func DefaultDeny() []netip.Prefix {
	return append([]netip.Prefix(nil), defaultDeny...)
}

// Classify tells whether a is refused by deny (nil: DefaultDeny) and why.
// The address is normalised first: its zone is dropped, an IPv4-mapped IPv6
// address becomes IPv4, and an IPv4 address embedded in a NAT64 (64:ff9b::/96,
// 64:ff9b:1::/48), 6to4 (2002::/16), Teredo, IPv4-compatible (::a.b.c.d),
// IPv4-translated (::ffff:0:a.b.c.d) or ISATAP (any prefix, interface
// identifier [02]00:5efe:a.b.c.d) address is checked as well, so that no
// spelling of 127.0.0.1 passes. The unspecified address and the cloud
// metadata addresses are refused even when deny does not list them.
// For an allowed address why is empty.
func Classify(a netip.Addr, deny []netip.Prefix) (why string, denied bool) {
	if deny == nil {
		deny = defaultDeny
	}
	v := check(a, deny, nil, nil)
	return v.why, v.denied
}

// verdict is the outcome of checking one resolved address.
type verdict struct {
	denied bool
	addr   netip.Addr   // the normalised address that matched (may be an embedded IPv4)
	rng    netip.Prefix // the range it matched
	why    string
}

// candidate is one address to check for a resolved address: the address
// itself or an IPv4 address embedded in it.
type candidate struct {
	addr netip.Addr
	via  string // "" for the address itself, else the embedding, e.g. "NAT64"
}

// normalise strips the zone and unmaps IPv4-mapped IPv6 addresses.
func normalise(a netip.Addr) netip.Addr {
	return a.WithZone("").Unmap()
}

var (
	nat64WKP   = netip.MustParsePrefix("64:ff9b::/96")    // RFC 6052 well-known prefix
	nat64Local = netip.MustParsePrefix("64:ff9b:1::/48")  // RFC 8215 local-use prefix
	sixToFour  = netip.MustParsePrefix("2002::/16")       // RFC 3056
	teredo     = netip.MustParsePrefix("2001::/32")       // RFC 4380
	v4Compat   = netip.MustParsePrefix("::/96")           // RFC 4291 2.5.5.1, deprecated
	v4Transl   = netip.MustParsePrefix("::ffff:0:0:0/96") // RFC 2765 (SIIT)
)

// rfc6052Layout is where RFC 6052 puts an IPv4 address inside an IPv6
// address for one prefix length. Bits 64..71 (byte 8) are the "u" octet and
// must be zero, as must the suffix after the IPv4 address.
type rfc6052Layout struct {
	pos    [4]int // byte positions of the IPv4 address
	suffix int    // first byte of the zero suffix (16: none)
}

var rfc6052Layouts = [...]rfc6052Layout{
	{pos: [4]int{6, 7, 9, 10}, suffix: 11},    // /48
	{pos: [4]int{7, 9, 10, 11}, suffix: 12},   // /56
	{pos: [4]int{9, 10, 11, 12}, suffix: 13},  // /64
	{pos: [4]int{12, 13, 14, 15}, suffix: 16}, // /96: byte 8 is prefix
}

func (l rfc6052Layout) consistent(b [16]byte) bool {
	if l.suffix == 16 {
		return true
	}
	if b[8] != 0 {
		return false
	}
	for _, x := range b[l.suffix:] {
		if x != 0 {
			return false
		}
	}
	return true
}

// candidates appends to dst a (already normalised) and every IPv4 address
// that a carries inside it and that a translator or tunnel could deliver
// traffic to.
func candidates(dst []candidate, a netip.Addr) []candidate {
	dst = append(dst, candidate{addr: a})
	if !a.Is6() {
		return dst
	}
	b := a.As16()
	v4 := func(i, j, k, l int) netip.Addr { return netip.AddrFrom4([4]byte{b[i], b[j], b[k], b[l]}) }
	switch {
	case nat64WKP.Contains(a):
		dst = append(dst, candidate{v4(12, 13, 14, 15), "NAT64"})
	case nat64Local.Contains(a):
		// The operator picks the prefix length inside 64:ff9b:1::/48 and we
		// do not know which, so every layout the address is consistent with
		// must be harmless. The /96 reading always applies; it reads
		// 0.0.0.0 (refused) for an address written in a shorter layout, so
		// a deployment using a local prefix shorter than /96 is refused as
		// a whole: fail closed.
		for _, l := range rfc6052Layouts {
			if l.consistent(b) {
				p := l.pos
				dst = append(dst, candidate{v4(p[0], p[1], p[2], p[3]), "local-use NAT64"})
			}
		}
	case sixToFour.Contains(a):
		dst = append(dst, candidate{v4(2, 3, 4, 5), "6to4"})
	case teredo.Contains(a):
		// Server address in bits 32..63, client address obfuscated (inverted)
		// in the last 32 bits.
		dst = append(dst, candidate{v4(4, 5, 6, 7), "Teredo"})
		dst = append(dst, candidate{netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]}), "Teredo"})
	case v4Compat.Contains(a):
		dst = append(dst, candidate{v4(12, 13, 14, 15), "IPv4-compatible"})
	case v4Transl.Contains(a):
		dst = append(dst, candidate{v4(12, 13, 14, 15), "IPv4-translated"})
	}
	if isISATAP(b) {
		dst = append(dst, candidate{v4(12, 13, 14, 15), "ISATAP"})
	}
	return dst
}

// isISATAP reports whether b's interface identifier is ISATAP's (RFC 5214,
// section 6.1): 00-00-5E-FE, or 02-00-5E-FE with the universal bit set,
// followed by an IPv4 address. The prefix may be any, a public one
// included: an ISATAP router of that prefix tunnels to the IPv4 address
// (and a 6to4 prefix with an ISATAP identifier carries two). The group bit
// is accepted too: a router that ignores it would still deliver.
func isISATAP(b [16]byte) bool {
	return b[8]&^0x03 == 0 && b[9] == 0 && b[10] == 0x5e && b[11] == 0xfe
}

// check decides on one resolved address. self are the gateway's own
// addresses (normalised), allow the ranges this destination may reach
// although deny lists them. Hard-denied and own addresses ignore allow.
func check(a netip.Addr, deny []netip.Prefix, self []netip.Addr, allow []netip.Prefix) verdict {
	if !a.IsValid() {
		return verdict{denied: true, addr: a, why: WhyInvalid}
	}
	a = normalise(a)
	var buf [8]candidate
	for _, c := range candidates(buf[:0], a) {
		if r, ok := longest(hardDeny, c.addr); ok {
			return denial(c, r.prefix, r.why)
		}
		if p, ok := matchPrefix(deny, c.addr); ok && !containsAddr(allow, c.addr) {
			why := fmt.Sprintf("in deny range %s", p)
			if r, ok := longest(denyRanges, c.addr); ok {
				why = r.why
			}
			return denial(c, p, why)
		}
		// Own addresses come after the deny ranges only so that 127.0.0.1
		// is reported as "loopback"; Allow never re-opens them.
		for _, s := range self {
			if s == c.addr {
				return denial(c, netip.PrefixFrom(s, s.BitLen()), WhySelf)
			}
		}
	}
	return verdict{addr: a}
}

func denial(c candidate, p netip.Prefix, why string) verdict {
	if c.via != "" {
		why = fmt.Sprintf("%s (IPv4 %s embedded in a %s address)", why, c.addr, c.via)
	}
	return verdict{denied: true, addr: c.addr, rng: p, why: why}
}

// longest returns the most specific known range that contains a.
func longest(rs []knownRange, a netip.Addr) (knownRange, bool) {
	var best knownRange
	found := false
	for _, r := range rs {
		if prefixContains(r.prefix, a) && (!found || r.prefix.Bits() > best.prefix.Bits()) {
			best, found = r, true
		}
	}
	return best, found
}

// matchPrefix returns the most specific prefix in ps that contains a.
func matchPrefix(ps []netip.Prefix, a netip.Addr) (netip.Prefix, bool) {
	var best netip.Prefix
	found := false
	for _, p := range ps {
		if prefixContains(p, a) && (!found || p.Bits() > best.Bits()) {
			best, found = p, true
		}
	}
	return best, found
}

func containsAddr(ps []netip.Prefix, a netip.Addr) bool {
	for _, p := range ps {
		if prefixContains(p, a) {
			return true
		}
	}
	return false
}

// prefixContains is p.Contains(a) where a prefix written as IPv4-mapped IPv6
// (::ffff:10.0.0.0/104) also matches the plain IPv4 address, since addresses
// are unmapped before they are checked.
func prefixContains(p netip.Prefix, a netip.Addr) bool {
	if p.Addr().Is4In6() && p.Bits() >= 96 {
		p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
	}
	return p.Contains(a)
}
