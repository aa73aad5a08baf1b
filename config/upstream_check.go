package config

import (
	"errors"
	"maps"
	"net"
	"net/netip"
	"slices"

	"github.com/sluice-egress/sluice/gateway/guard"
)

// CheckUpstreamHosts is what config check adds to Validate: it refuses, against
// this machine's own addresses, what checkUpstreamHosts refuses. (Load does not
// do it: a config is loaded on other machines too.)
func (c *Config) CheckUpstreamHosts() error { return checkUpstreamHosts(c, ownAddrs()) }

// checkUpstreamHosts refuses what the gateway's dialer would refuse on
// every request: an upstream.hosts mapping to loopback, the unspecified
// or a cloud metadata address, or one of this machine's own addresses,
// with the reason the runtime gives. (A private range is left alone: an
// entry's allow_addresses may open it.)
func checkUpstreamHosts(cfg *Config, own []netip.Addr) error {
	var errs []error
	for _, h := range slices.Sorted(maps.Keys(cfg.Upstream.Hosts)) {
		a, err := netip.ParseAddr(cfg.Upstream.Hosts[h])
		if err != nil {
			continue // Validate has said so
		}
		a = a.Unmap()
		why, denied := guard.Classify(a, nil)
		switch {
		case denied && (why == guard.WhyLoopback || why == guard.WhyUnspecified || why == guard.WhyMetadata):
		case slices.Contains(own, a):
			why, denied = guard.WhySelf, true
		default:
			denied = false
		}
		if denied {
			errs = append(errs, cfg.FieldErr("upstream.hosts."+h,
				"maps %s to %s: the gateway refuses to dial it (%s), so every request to %s would fail", h, a, why, h))
		}
	}
	return errors.Join(errs...)
}

// ownAddrs are this machine's interface addresses and the loopback ones.
func ownAddrs() []netip.Addr {
	out := []netip.Addr{netip.IPv4Unspecified(), netip.MustParseAddr("127.0.0.1"), netip.IPv6Loopback()}
	as, _ := net.InterfaceAddrs()
	for _, a := range as {
		if p, err := netip.ParsePrefix(a.String()); err == nil {
			out = append(out, p.Addr().Unmap())
		}
	}
	return out
}
