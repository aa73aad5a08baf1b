package main

import (
	"context"
	"net"
	"net/netip"
	"sync/atomic"

	"github.com/sluice-egress/sluice/gateway"
	"github.com/sluice-egress/sluice/gateway/guard"
	"github.com/sluice-egress/sluice/scanner"
)

// dialerHolder is the gateway's Dialer: a guard.Dialer, whose fields must not
// change once in use, replaced whole when a reload changes upstream.hosts.
type dialerHolder struct {
	cur atomic.Pointer[guard.Dialer]
}

var _ gateway.Dialer = (*dialerHolder)(nil)

func newDialerHolder(d *guard.Dialer) *dialerHolder {
	h := &dialerHolder{}
	h.cur.Store(d)
	return h
}

func (h *dialerHolder) Dial(ctx context.Context, t guard.Target) (net.Conn, error) {
	return h.cur.Load().Dial(ctx, t)
}

// load returns the current dialer; nil for a nil holder.
func (h *dialerHolder) load() *guard.Dialer {
	if h == nil {
		return nil
	}
	return h.cur.Load()
}

// setUpstream installs a copy of the current dialer with hosts as its static
// resolution and extraDeny (upstream.deny) as its added deny ranges; every
// other setting (the built-in deny ranges, resolver) carries over.
func (h *dialerHolder) setUpstream(hosts map[string]netip.Addr, extraDeny []netip.Prefix) {
	d := *h.cur.Load()
	d.Hosts, d.ExtraDeny = hosts, extraDeny
	h.cur.Store(&d)
}

var _ gateway.Scanner = (*scanner.Holder)(nil)

var _ gateway.HostScanner = (*scanner.Holder)(nil)
