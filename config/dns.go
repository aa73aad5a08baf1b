package config

import (
	"fmt"
	"net"
	"net/netip"
	"strings"

	"github.com/sluice-egress/sluice/rules"
)

// Sandbox resolver modes (dns.mode).
const (
	DNSModeExplicit    = "explicit"
	DNSModeTransparent = "transparent"
)

// DNS configures the sandboxes' resolver (listen.dns) and who the sandboxes are by
// address, for the resolver and the transparent listeners alike.
type DNS struct {
	// Mode is DNSModeExplicit (the default when empty: the gateway's own names only) or
	// DNSModeTransparent (the names the policy allows, answered with the gateway's
	// address).
	Mode string `yaml:"mode"`
	// Names are the gateway's own names, answered in both modes. Nil: sluice.internal;
	// an empty list: none.
	Names []string `yaml:"names"`
	// Addrs are the gateway's addresses as sandboxes reach it (IP literals): what the
	// names answer. Empty: listen.dns's address, which must then be a specific one.
	Addrs []string `yaml:"addrs"`
	// TTL of the answers; zero: 30s.
	TTL Duration `yaml:"ttl"`
	// QueriesPerSecond and Burst bound each source address's queries; zero: 50 and 200.
	QueriesPerSecond float64 `yaml:"queries_per_second"`
	Burst            int     `yaml:"burst"`
	// Sources map sandbox networks to tenants, besides the addresses runs register.
	// A source address in none of them is refused.
	Sources []DNSSource `yaml:"sources"`
}

// ModeOrDefault is Mode, DNSModeExplicit when empty.
func (d DNS) ModeOrDefault() string {
	if d.Mode == "" {
		return DNSModeExplicit
	}
	return d.Mode
}

// DNSSource maps a network of sandboxes to a tenant and launch class.
type DNSSource struct {
	// CIDR is the network ("10.244.0.0/16") or one address.
	CIDR string `yaml:"cidr"`
	// Tenant is required and must be configured.
	Tenant string `yaml:"tenant"`
	// Class is the launch class; "" means rules.DefaultClass.
	Class string `yaml:"class"`
}

// Prefix returns the source's network, an address as its /32 or /128.
func (s DNSSource) Prefix() (netip.Prefix, error) {
	if p, err := netip.ParsePrefix(s.CIDR); err == nil {
		if p.Addr().Zone() != "" {
			return netip.Prefix{}, fmt.Errorf("bad cidr %q: no zone", s.CIDR)
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s.CIDR)
	if err != nil || a.Zone() != "" {
		return netip.Prefix{}, fmt.Errorf("bad cidr %q: want a network such as 10.244.0.0/16 or an address", s.CIDR)
	}
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// ClassOrDefault is Class, or rules.DefaultClass when empty.
func (s DNSSource) ClassOrDefault() string {
	if s.Class == "" {
		return rules.DefaultClass
	}
	return s.Class
}

// AddrList returns Addrs parsed; Validate has checked them.
func (d *DNS) AddrList() []netip.Addr {
	var out []netip.Addr
	for _, a := range d.Addrs {
		if ip, err := netip.ParseAddr(a); err == nil {
			out = append(out, ip)
		}
	}
	return out
}

func (v *validator) dns() {
	c := v.c
	d := &c.DNS
	for _, k := range []struct{ key, addr string }{
		{"listen.dns", c.Listen.DNS},
		{"listen.transparent_http", c.Listen.TransparentHTTP},
		{"listen.transparent_tls", c.Listen.TransparentTLS},
	} {
		if k.addr != "" {
			v.addr(k.key, k.addr)
		}
	}
	switch d.Mode {
	case "", DNSModeExplicit:
	case DNSModeTransparent:
		if c.Listen.TransparentTLS == "" && c.Listen.TransparentHTTP == "" {
			v.fail("dns.mode", "transparent answers names with the gateway's address: set listen.transparent_tls (and listen.transparent_http) for the connections that follow")
		}
	default:
		v.fail("dns.mode", "got %q, want %s or %s", d.Mode, DNSModeExplicit, DNSModeTransparent)
	}
	for i, n := range d.Names {
		key := fmt.Sprintf("dns.names[%d]", i)
		h, err := rules.NormalizeHost(n)
		if err != nil || net.ParseIP(h) != nil || strings.Contains(h, "*") {
			v.fail(key, "bad name %q: want a host name such as sluice.internal", n)
		}
	}
	for i, a := range d.Addrs {
		if ip, err := netip.ParseAddr(a); err != nil || ip.Zone() != "" || ip.IsUnspecified() {
			v.fail(fmt.Sprintf("dns.addrs[%d]", i), "bad address %q: want the gateway's IP address as sandboxes reach it", a)
		}
	}
	if c.Listen.DNS != "" && len(d.Addrs) == 0 {
		if host, _, err := net.SplitHostPort(c.Listen.DNS); err == nil {
			if ip, err := netip.ParseAddr(host); host == "" || (err == nil && ip.IsUnspecified()) {
				v.fail("dns.addrs", "listen.dns listens on all addresses: name the gateway's address as sandboxes reach it, such as [10.96.0.53]")
			} else if err != nil {
				v.fail("listen.dns", "want an IP address, not the name %q: the resolver answers with it", host)
			}
		}
	}
	if d.TTL < 0 {
		v.fail("dns.ttl", "must not be negative")
	}
	if d.QueriesPerSecond < 0 {
		v.fail("dns.queries_per_second", "must not be negative")
	}
	if d.Burst < 0 {
		v.fail("dns.burst", "must not be negative")
	}
	seen := map[netip.Prefix]int{}
	for i, s := range d.Sources {
		key := fmt.Sprintf("dns.sources[%d]", i)
		p, err := s.Prefix()
		if err != nil {
			v.fail(key+".cidr", "%v", err)
		} else if j, dup := seen[p]; dup {
			v.fail(key+".cidr", "%s is already dns.sources[%d]", p, j)
		} else {
			seen[p] = i
		}
		t := c.Tenants[s.Tenant]
		switch {
		case s.Tenant == "":
			v.fail(key+".tenant", "required: the tenant whose sandboxes use these addresses")
		case t == nil:
			v.fail(key+".tenant", "no tenant %q in tenants", s.Tenant)
		case t.Classes[s.ClassOrDefault()] == nil:
			v.fail(key+".class", "tenant %s has no class %q", s.Tenant, s.ClassOrDefault())
		}
	}
}
