package guard

import (
	"context"
	"net"
	"net/netip"
	"sync/atomic"
)

// Holder dials with a Dialer that can be replaced while in use: a Dialer's
// fields must not change once it dials, so a reload that changes the static
// hosts or the added deny ranges installs a changed copy whole.
type Holder struct {
	cur atomic.Pointer[Dialer]
}

// NewHolder returns a Holder dialing with d.
func NewHolder(d *Dialer) *Holder {
	h := &Holder{}
	h.cur.Store(d)
	return h
}

// Dial dials with the current Dialer.
func (h *Holder) Dial(ctx context.Context, t Target) (net.Conn, error) {
	return h.cur.Load().Dial(ctx, t)
}

// Load returns the current Dialer; nil for a nil Holder. It must not be changed.
func (h *Holder) Load() *Dialer {
	if h == nil {
		return nil
	}
	return h.cur.Load()
}

// Store replaces the Dialer.
func (h *Holder) Store(d *Dialer) { h.cur.Store(d) }

// SetUpstream installs a copy of the current Dialer with hosts as its static
// resolution and extraDeny as its added deny ranges; every other setting
// (the built-in deny ranges, the resolver) carries over.
func (h *Holder) SetUpstream(hosts map[string]netip.Addr, extraDeny []netip.Prefix) {
	d := *h.cur.Load()
	d.Hosts, d.ExtraDeny = hosts, extraDeny
	h.cur.Store(&d)
}
