// Package guard dials upstream hosts only at addresses outside the deny ranges, and dials the very address it checked.
package guard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"time"
)

// Resolver looks up the addresses of a host name. *net.Resolver satisfies it.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

var _ Resolver = (*net.Resolver)(nil)

// ErrAddressDenied is matched (errors.Is) by every refusal of an address.
var ErrAddressDenied = errors.New("guard: address not allowed")

// DeniedError says which address of which host was refused, and why.
type DeniedError struct {
	Host  string       // the host as the Target named it
	Addr  netip.Addr   // the resolved address that was refused (zone stripped, unmapped)
	Range netip.Prefix // the deny range it fell in (for an embedded IPv4, an IPv4 range)
	Why   string       // in words: "loopback", "private (RFC 1918)", "cloud metadata", "gateway's own address", …
}

func (e *DeniedError) Error() string {
	if e.Host == e.Addr.String() {
		return fmt.Sprintf("guard: address %s not allowed: %s", e.Addr, e.Why)
	}
	return fmt.Sprintf("guard: host %s resolves to %s, which is not allowed: %s", e.Host, e.Addr, e.Why)
}

// Is makes errors.Is(err, ErrAddressDenied) true.
func (e *DeniedError) Is(target error) bool { return target == ErrAddressDenied }

// Target is one upstream destination.
type Target struct {
	// Host is the normalised host: an IP literal or a lower-case name
	// without a trailing dot.
	Host string
	// Port is the TCP port, 1 to 65535.
	Port int
	// Allow lists addresses in the deny ranges that this destination may
	// reach nevertheless (an internal mirror). It never re-opens the
	// unspecified address, a cloud metadata address or the gateway's own
	// addresses: no legitimate mirror lives there, and reaching them is the
	// attack this package exists to stop. Nil: nothing re-opened.
	Allow []netip.Prefix
}

// Dialer dials upstream hosts after checking every address they resolve to.
// Its zero value is ready to use. A Dialer is safe for concurrent use; its
// fields must not change once it is in use.
type Dialer struct {
	// Resolver resolves host names. Nil: net.DefaultResolver.
	Resolver Resolver
	// Hosts is static resolution (config upstream.hosts), consulted before
	// DNS; keys are normalised host names. Its addresses are checked like
	// any other. Nil: none.
	Hosts map[string]netip.Addr
	// Deny lists the ranges to refuse. Nil: DefaultDeny(). An empty non-nil
	// slice refuses only the addresses that are always refused (unspecified,
	// cloud metadata, Self).
	Deny []netip.Prefix
	// ExtraDeny lists ranges refused besides Deny (or its default): what
	// an operator adds (config upstream.deny) without having to restate,
	// and so without the risk of dropping, the default ranges. A
	// Target.Allow re-opens them as it re-opens Deny's. Nil: none.
	ExtraDeny []netip.Prefix
	// Self lists the gateway's own addresses and bridge gateways, always
	// denied. Nil: 127.0.0.1, ::1, the addresses of this machine's
	// interfaces (net.InterfaceAddrs), refreshed at most every 5s, plus the
	// default-route gateway(s) from /proc/net/route and /proc/net/ipv6_route
	// — the container bridge gateway.
	Self func() []netip.Addr
	// DialFunc dials the checked address, given as an IP literal and port.
	// Nil: a net.Dialer with Timeout 10s and KeepAlive 30s. Tests replace
	// it to dial inside a network namespace.
	DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)
	// Logger receives a line per refused host. Nil: nothing is logged.
	Logger *slog.Logger
}

// Log keys.
const (
	logKeyHost = "host"
	logKeyAddr = "addr"
	logKeyWhy  = "why"
	logKeyErr  = "err"
)

var defaultNetDialer = &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}

func (d *Dialer) resolver() Resolver {
	if d.Resolver != nil {
		return d.Resolver
	}
	return net.DefaultResolver
}

func (d *Dialer) deny() []netip.Prefix {
	base := defaultDeny
	if d.Deny != nil {
		base = d.Deny
	}
	if len(d.ExtraDeny) == 0 {
		return base
	}
	return append(append(make([]netip.Prefix, 0, len(base)+len(d.ExtraDeny)), base...), d.ExtraDeny...)
}

func (d *Dialer) dialFunc() func(ctx context.Context, network, addr string) (net.Conn, error) {
	if d.DialFunc != nil {
		return d.DialFunc
	}
	return defaultNetDialer.DialContext
}

func (d *Dialer) logger() *slog.Logger {
	if d.Logger != nil {
		return d.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// self returns the normalised own addresses.
func (d *Dialer) self() ([]netip.Addr, error) {
	if d.Self == nil {
		return machineSelf.get()
	}
	in := d.Self()
	out := make([]netip.Addr, 0, len(in))
	for _, a := range in {
		if a.IsValid() {
			out = append(out, normalise(a))
		}
	}
	return out, nil
}

// Dial resolves t.Host once (IP literal as is, else Hosts, else Resolver),
// checks every address it resolves to, and refuses the whole host if any one
// of them is denied: a name that answers with a public and a private address
// is a rebinding attempt, not a choice. Otherwise it dials the checked
// addresses in order, as IP literals, and returns the first connection made.
// A refusal is a *DeniedError (errors.Is(err, ErrAddressDenied)).
func (d *Dialer) Dial(ctx context.Context, t Target) (net.Conn, error) {
	addrs, err := d.Check(ctx, t)
	if err != nil {
		return nil, err
	}
	dial := d.dialFunc()
	var errs []error
	for _, a := range addrs {
		addr := netip.AddrPortFrom(a, uint16(t.Port)).String()
		conn, err := dial(ctx, "tcp", addr)
		if err == nil {
			return conn, nil
		}
		d.logger().DebugContext(ctx, "guard: dial failed", logKeyHost, t.Host, logKeyAddr, addr, logKeyErr, err)
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("guard: dial %s port %d: %w", t.Host, t.Port, errors.Join(errs...))
}

// Check resolves t.Host once and returns the addresses Dial would dial, in
// order, normalised (zone stripped, IPv4-mapped IPv6 unmapped); or the
// refusal, or the resolution error, without dialing anything.
func (d *Dialer) Check(ctx context.Context, t Target) ([]netip.Addr, error) {
	if t.Port < 1 || t.Port > 65535 {
		return nil, fmt.Errorf("guard: %s: invalid port %d", t.Host, t.Port)
	}
	addrs, err := d.resolve(ctx, t.Host)
	if err != nil {
		return nil, err
	}
	self, err := d.self()
	if err != nil {
		return nil, err // fail closed: without our own addresses we cannot tell
	}
	deny := d.deny()
	out := make([]netip.Addr, 0, len(addrs))
	for _, a := range addrs {
		v := check(a, deny, self, t.Allow)
		if v.denied {
			e := &DeniedError{Host: t.Host, Addr: normalise(a), Range: v.rng, Why: v.why}
			if !a.IsValid() {
				e.Addr = a
			}
			d.logger().WarnContext(ctx, "guard: address denied", logKeyHost, t.Host, logKeyAddr, e.Addr.String(), logKeyWhy, v.why)
			return nil, e
		}
		out = append(out, normalise(a))
	}
	return dedupe(out), nil
}

// resolve returns the addresses of host: an IP literal as is, else the
// Hosts entry, else the Resolver's answer. It resolves exactly once.
func (d *Dialer) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if host == "" {
		return nil, errors.New("guard: empty host")
	}
	lit := host
	if strings.HasPrefix(lit, "[") && strings.HasSuffix(lit, "]") {
		lit = lit[1 : len(lit)-1]
	}
	if a, err := netip.ParseAddr(lit); err == nil {
		return []netip.Addr{a}, nil
	}
	if d.Hosts != nil {
		if a, ok := d.Hosts[host]; ok {
			return []netip.Addr{a}, nil
		}
		if a, ok := d.Hosts[strings.TrimSuffix(strings.ToLower(host), ".")]; ok {
			return []netip.Addr{a}, nil
		}
	}
	addrs, err := d.resolver().LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, fmt.Errorf("guard: resolve %s: %w", host, err)
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("guard: resolve %s: no addresses", host)
	}
	return addrs, nil
}
