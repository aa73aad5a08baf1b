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

// setHosts installs a copy of the current dialer with hosts as its static
// resolution; every other setting (deny ranges, resolver) carries over.
func (h *dialerHolder) setHosts(hosts map[string]netip.Addr) {
	d := *h.cur.Load()
	d.Hosts = hosts
	h.cur.Store(&d)
}

// scannerHolder is the gateway's Scanner: the current scanner, swapped
// atomically when a reload changes the scanning keys or rule packs. A request
// is scanned whole by the scanner it started with.
type scannerHolder struct {
	cur atomic.Pointer[scanner.Scanner]
}

var _ gateway.Scanner = (*scannerHolder)(nil)

func newScannerHolder(sc *scanner.Scanner) *scannerHolder {
	h := &scannerHolder{}
	h.cur.Store(sc)
	return h
}

func (h *scannerHolder) Scan(ctx context.Context, req *scanner.Request) (*scanner.Result, error) {
	return h.cur.Load().Scan(ctx, req)
}

var _ gateway.HostScanner = (*scannerHolder)(nil)

func (h *scannerHolder) ScanHost(ctx context.Context, tenant, host string, wildcardLabels int) (*scanner.Result, error) {
	return h.cur.Load().ScanHost(ctx, tenant, host, wildcardLabels)
}

// Current returns the scanner in use (the gateway reads its body limit for
// WebSocket messages through it).
func (h *scannerHolder) Current() *scanner.Scanner { return h.cur.Load() }

func (h *scannerHolder) swap(sc *scanner.Scanner) { h.cur.Store(sc) }
