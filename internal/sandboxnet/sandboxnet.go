// Package sandboxnet serves sandboxes by their source address rather than
// their proxy credentials: the sandboxes' resolver (sandboxdns) and the
// gateway's transparent listeners, sharing one table of sources, with the
// policy, scanner, runs and event sink adapted to what the resolver declares.
package sandboxnet

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"

	"github.com/sluice-egress/sluice/gateway"
	"github.com/sluice-egress/sluice/rules"
	"github.com/sluice-egress/sluice/runs"
	"github.com/sluice-egress/sluice/sandboxdns"
	"github.com/sluice-egress/sluice/scanner"
)

// Decider decides for a query as the gateway does (*rules.Holder).
type Decider interface {
	Decide(q rules.Query) rules.Decision
}

// Net is the resolver and the transparent listeners. Set the fields, then
// Open, Serve and Shutdown; Close releases what an Open bound when what
// follows it failed.
type Net struct {
	// DNS, TransparentTLS and TransparentHTTP are the listen addresses
	// (host:port); "" is off.
	DNS, TransparentTLS, TransparentHTTP string
	// Resolver answers the sandboxes' queries when DNS is set; Open fills
	// its Sources, Policy, Labels and Events.
	Resolver *sandboxdns.Server
	// Policy decides the names the resolver answers in transparent mode.
	Policy Decider
	// Scanner reads queried names for secrets, canaries and phantoms; nil:
	// the resolver's own label checks only.
	Scanner *scanner.Holder
	// Gateway serves the transparent connections, and its Events take the
	// resolver's refusals. Required.
	Gateway *gateway.Gateway
	// ProbeKey returns the key of the tenant's doctor probe tags (its CA's).
	ProbeKey func(tenant string) []byte
	// Logger nil: slog.Default().
	Logger *slog.Logger
	// Table maps source addresses to sandboxes: static sources and runs'.
	Table sandboxdns.Table

	dnsUDP  net.PacketConn
	dnsTCP  net.Listener
	tp      *gateway.Transparent
	tlsLn   net.Listener
	httpLn  net.Listener
	stopDNS context.CancelFunc
	dnsDone chan struct{}
}

func (n *Net) logger() *slog.Logger {
	if n.Logger != nil {
		return n.Logger
	}
	return slog.Default()
}

// Open binds the resolver's and the transparent listeners, each only when
// its address is set.
func (n *Net) Open() error {
	if n.DNS != "" && n.Resolver != nil {
		r := n.Resolver
		r.Sources = &n.Table
		r.Policy = sandboxdns.PolicyFunc(n.allowName)
		r.Labels = sandboxdns.LabelScanners{sandboxdns.LabelCheck{}, scannerLabels{n.Scanner}}
		r.Events = dnsEvents{sink: n.Gateway.Events}
		if n.Scanner != nil {
			r.RecordName = func(ctx context.Context, tenant, name string) string {
				return gateway.EvidenceHost(ctx, n.Scanner, tenant, name)
			}
		}
		var err error
		if n.dnsUDP, n.dnsTCP, err = sandboxdns.Listen(n.DNS); err != nil {
			return fmt.Errorf("dns listener: %w (change listen.dns)", err)
		}
	}
	if err := n.openTransparent(); err != nil {
		n.Close()
		return err
	}
	return nil
}

// openTransparent binds the transparent listeners: connections the
// sandboxes' network redirects to the gateway, identified by their source
// address in the table.
func (n *Net) openTransparent() error {
	if n.TransparentTLS == "" && n.TransparentHTTP == "" {
		return nil
	}
	n.tp = &gateway.Transparent{
		Gateway: n.Gateway,
		Sources: gateway.SourcesFunc(func(a netip.Addr) (rules.Identity, bool) {
			id, ok := n.Table.Lookup(a)
			return rules.Identity{Tenant: id.Tenant, Class: id.Class, Run: id.Run}, ok
		}),
		ProbeKey: n.ProbeKey,
	}
	var err error
	if n.TransparentTLS != "" {
		if n.tlsLn, err = net.Listen("tcp", n.TransparentTLS); err != nil {
			return fmt.Errorf("transparent TLS listener: %w (change listen.transparent_tls)", err)
		}
	}
	if n.TransparentHTTP != "" {
		if n.httpLn, err = net.Listen("tcp", n.TransparentHTTP); err != nil {
			return fmt.Errorf("transparent HTTP listener: %w (change listen.transparent_http)", err)
		}
	}
	return nil
}

// Serve serves the resolver and the transparent listeners in the
// background until ctx ends (the resolver) or Shutdown.
func (n *Net) Serve(ctx context.Context) {
	if n.dnsUDP != nil {
		dctx, cancel := context.WithCancel(ctx)
		n.stopDNS, n.dnsDone = cancel, make(chan struct{})
		go func() {
			defer close(n.dnsDone)
			if err := n.Resolver.Serve(dctx, n.dnsUDP, n.dnsTCP); err != nil {
				n.logger().Error("sandbox resolver stopped", "err", err)
			}
		}()
	}
	for _, l := range []struct {
		ln    net.Listener
		serve func(net.Listener) error
		what  string
	}{{n.tlsLn, n.tp.ServeTLS, "transparent TLS listener stopped"}, {n.httpLn, n.tp.ServeHTTP, "transparent HTTP listener stopped"}} {
		if l.ln != nil {
			go func() {
				if err := l.serve(l.ln); err != nil {
					n.logger().Error(l.what, "err", err)
				}
			}()
		}
	}
}

// Shutdown stops the resolver and the transparent listeners; their open
// tunnels are the gateway's, drained by its Shutdown.
func (n *Net) Shutdown(ctx context.Context) {
	if n.stopDNS != nil {
		n.stopDNS()
		<-n.dnsDone
	}
	if n.tp != nil {
		n.tp.Shutdown(ctx)
	}
}

// Close releases listeners bound by an Open when what followed it failed.
func (n *Net) Close() {
	if n.dnsUDP != nil {
		n.dnsUDP.Close()
	}
	for _, l := range []net.Listener{n.dnsTCP, n.tlsLn, n.httpLn} {
		if l != nil {
			l.Close()
		}
	}
}

// Announce prints the bound addresses; mode is the resolver's.
func (n *Net) Announce(w io.Writer, mode string) {
	if n.dnsUDP != nil {
		fmt.Fprintf(w, "sandbox resolver on %s (udp and tcp, %s mode)\n", n.dnsUDP.LocalAddr(), mode)
	}
	if n.tlsLn != nil {
		fmt.Fprintf(w, "transparent TLS on %s\n", n.tlsLn.Addr())
	}
	if n.httpLn != nil {
		fmt.Fprintf(w, "transparent HTTP on %s\n", n.httpLn.Addr())
	}
}

// DNSAddr is the bound resolver address ("" when off), useful with port 0.
func (n *Net) DNSAddr() string {
	if n.dnsUDP == nil {
		return ""
	}
	return n.dnsUDP.LocalAddr().String()
}

// TLSAddr and HTTPAddr are the bound transparent listeners' addresses ("" when off).
func (n *Net) TLSAddr() string  { return addr(n.tlsLn) }
func (n *Net) HTTPAddr() string { return addr(n.httpLn) }

func addr(l net.Listener) string {
	if l == nil {
		return ""
	}
	return l.Addr().String()
}

// Sandboxes is what runs register their sandbox addresses with; nil when
// nothing identifies sandboxes by address, so that a run naming one is
// refused rather than silently ignored.
func (n *Net) Sandboxes() runs.Sandboxes {
	if n.DNS == "" && n.TransparentTLS == "" && n.TransparentHTTP == "" {
		return nil
	}
	return sandboxClaims{&n.Table}
}
