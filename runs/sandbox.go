package runs

import (
	"fmt"
	"net/netip"

	"github.com/sluice-egress/sluice/rules"
)

// Sandboxes is where runs register their sandbox's address or network, so that the
// resolver and the transparent listeners know whose sandbox a source address is.
// cmd backs it with sandboxdns.Table.
type Sandboxes interface {
	// Claim maps p to the run, or fails when p overlaps another sandbox's addresses.
	Claim(p netip.Prefix, id rules.Identity) error
	// Release forgets what the run claimed.
	Release(run string)
}

// Smallest prefixes a run may claim as its sandbox network: a sandbox's own subnet,
// never a share of the address space that other sandboxes live in.
const (
	MinSandboxBits4 = 16
	MinSandboxBits6 = 48
)

// ParseSandbox reads a run's sandbox_addr (one address) or sandbox_network (a prefix);
// at most one may be set. Neither: the zero prefix (no registration).
func ParseSandbox(addr, network string) (netip.Prefix, error) {
	switch {
	case addr != "" && network != "":
		return netip.Prefix{}, fmt.Errorf("%w: set sandbox_addr or sandbox_network, not both", ErrInvalid)
	case addr != "":
		a, err := netip.ParseAddr(addr)
		if err != nil || a.Zone() != "" || !a.IsGlobalUnicast() {
			return netip.Prefix{}, fmt.Errorf("%w: sandbox_addr %q: want the sandbox's IP address", ErrInvalid, addr)
		}
		a = a.Unmap()
		return netip.PrefixFrom(a, a.BitLen()), nil
	case network != "":
		p, err := netip.ParsePrefix(network)
		if err != nil || p.Addr().Zone() != "" {
			return netip.Prefix{}, fmt.Errorf("%w: sandbox_network %q: want a prefix such as 10.244.3.0/24", ErrInvalid, network)
		}
		if p.Addr().Is4In6() {
			p = netip.PrefixFrom(p.Addr().Unmap(), max(p.Bits()-96, 0))
		}
		min := MinSandboxBits6
		if p.Addr().Is4() {
			min = MinSandboxBits4
		}
		if p.Bits() < min {
			return netip.Prefix{}, fmt.Errorf("%w: sandbox_network %s: at most a /%d", ErrInvalid, p, min)
		}
		return p.Masked(), nil
	}
	return netip.Prefix{}, nil
}

// claimSandbox registers a new or restored run's sandbox, if it named one.
func (m *Service) claimSandbox(p netip.Prefix, id rules.Identity) error {
	if !p.IsValid() {
		return nil
	}
	if m.Sandboxes == nil {
		return fmt.Errorf("%w: this server identifies no sandboxes by address (listen.dns and the transparent listeners are off)", ErrInvalid)
	}
	if err := m.Sandboxes.Claim(p, id); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return nil
}

func (m *Service) releaseSandbox(run string) {
	if m.Sandboxes != nil {
		m.Sandboxes.Release(run)
	}
}
