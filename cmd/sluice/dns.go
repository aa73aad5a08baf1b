package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-egress/sluice/config"
	"github.com/sluice-egress/sluice/gateway"
	"github.com/sluice-egress/sluice/incident"
	"github.com/sluice-egress/sluice/internal/probetag"
	"github.com/sluice-egress/sluice/rules"
	"github.com/sluice-egress/sluice/runs"
	"github.com/sluice-egress/sluice/sandboxdns"
	"github.com/sluice-egress/sluice/scanner"
)

// sandboxNet is what serves sandboxes by their address rather than their proxy
// credentials: the resolver (listen.dns) and the transparent listeners
// (listen.transparent_*), sharing one table of sandbox sources (dns.sources and the
// runs' sandbox addresses).
type sandboxNet struct {
	table sandboxdns.Table

	dns    *sandboxdns.Server
	dnsUDP net.PacketConn
	dnsTCP net.Listener

	tp      *gateway.Transparent
	tlsLn   net.Listener
	httpLn  net.Listener
	stopDNS context.CancelFunc
	dnsDone chan struct{}
}

// openSandbox binds the resolver's and the transparent listeners (each only when
// configured) and fills the sources table from the config.
func (s *Server) openSandbox() error {
	cfg := s.Config
	sn := &s.sandbox
	sn.table.SetStatic(staticSources(cfg))
	if cfg.Listen.DNS != "" {
		mode := sandboxdns.Explicit
		if cfg.DNS.Mode == config.DNSModeTransparent {
			mode = sandboxdns.Transparent
		}
		sn.dns = &sandboxdns.Server{
			Mode:             mode,
			Names:            cfg.DNS.Names,
			Addrs:            cfg.DNS.AddrList(),
			TTL:              time.Duration(cfg.DNS.TTL),
			Sources:          &sn.table,
			Policy:           sandboxdns.PolicyFunc(s.allowName),
			Labels:           sandboxdns.LabelScanners{sandboxdns.LabelCheck{}, scannerLabels{s.scanner}},
			Events:           dnsEvents{sink: s.gw.Events},
			Logger:           s.Logger,
			QueriesPerSecond: cfg.DNS.QueriesPerSecond,
			Burst:            cfg.DNS.Burst,
		}
		var err error
		if sn.dnsUDP, sn.dnsTCP, err = listenDNS(cfg.Listen.DNS); err != nil {
			return fmt.Errorf("dns listener: %w (change listen.dns)", err)
		}
	}
	if err := s.openTransparent(); err != nil {
		sn.close()
		return err
	}
	return nil
}

// listenDNS binds UDP and TCP on the same port: with port 0, the one UDP got.
func listenDNS(addr string) (net.PacketConn, net.Listener, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, nil, err
	}
	for try := 0; ; try++ {
		pc, err := net.ListenPacket("udp", addr)
		if err != nil {
			return nil, nil, err
		}
		bound := strconv.Itoa(pc.LocalAddr().(*net.UDPAddr).Port)
		ln, err := net.Listen("tcp", net.JoinHostPort(host, bound))
		if err == nil {
			return pc, ln, nil
		}
		pc.Close()
		if port != "0" || try == 4 {
			return nil, nil, err
		}
	}
}

// staticSources is dns.sources as the table holds them.
func staticSources(cfg *config.Config) map[netip.Prefix]sandboxdns.Identity {
	m := map[netip.Prefix]sandboxdns.Identity{}
	for _, src := range cfg.DNS.Sources {
		if p, err := src.Prefix(); err == nil { // Validate has checked it
			m[p] = sandboxdns.Identity{Tenant: src.Tenant, Class: src.ClassOrDefault()}
		}
	}
	return m
}

// reloadSandbox applies a reloaded config's dns.sources; listeners and the resolver's
// other settings need a restart, which it says.
func (s *Server) reloadSandbox(cfg *config.Config) {
	s.sandbox.table.SetStatic(staticSources(cfg))
	was, now := s.Config.DNS, cfg.DNS
	was.Sources, now.Sources = nil, nil
	if !reflect.DeepEqual(was, now) {
		s.Logger.Warn("policy reloaded, but these settings apply only after a restart", "keys", []string{"dns (but dns.sources)"})
	}
}

// serveSandbox serves the resolver and the transparent listeners until ctx ends.
func (s *Server) serveSandbox(ctx context.Context) {
	sn := &s.sandbox
	if sn.dns != nil {
		dctx, cancel := context.WithCancel(ctx)
		sn.stopDNS, sn.dnsDone = cancel, make(chan struct{})
		go func() {
			defer close(sn.dnsDone)
			if err := sn.dns.Serve(dctx, sn.dnsUDP, sn.dnsTCP); err != nil {
				s.Logger.Error("sandbox resolver stopped", "err", err)
			}
		}()
	}
	s.serveTransparent()
}

// shutdownSandbox stops the resolver and the transparent listeners; their open
// tunnels are the gateway's, drained by its Shutdown.
func (s *Server) shutdownSandbox(ctx context.Context) {
	sn := &s.sandbox
	if sn.stopDNS != nil {
		sn.stopDNS()
		<-sn.dnsDone
	}
	if sn.tp != nil {
		sn.tp.Shutdown(ctx)
	}
}

// close releases listeners bound by an Open that failed later.
func (sn *sandboxNet) close() {
	if sn.dnsUDP != nil {
		sn.dnsUDP.Close()
	}
	for _, l := range []net.Listener{sn.dnsTCP, sn.tlsLn, sn.httpLn} {
		if l != nil {
			l.Close()
		}
	}
}

// announceSandbox prints the resolver's and transparent listeners' addresses.
func (s *Server) announceSandbox(w io.Writer) {
	sn := &s.sandbox
	if sn.dnsUDP != nil {
		mode := s.Config.DNS.Mode
		if mode == "" {
			mode = config.DNSModeExplicit
		}
		fmt.Fprintf(w, "sandbox resolver on %s (udp and tcp, %s mode)\n", sn.dnsUDP.LocalAddr(), mode)
	}
	if sn.tlsLn != nil {
		fmt.Fprintf(w, "transparent TLS on %s\n", sn.tlsLn.Addr())
	}
	if sn.httpLn != nil {
		fmt.Fprintf(w, "transparent HTTP on %s\n", sn.httpLn.Addr())
	}
}

// DNSAddr is the bound resolver address ("" when off), useful with port 0.
func (s *Server) DNSAddr() string {
	if s.sandbox.dnsUDP == nil {
		return ""
	}
	return s.sandbox.dnsUDP.LocalAddr().String()
}

// allowName is the resolver's policy in transparent mode: a name resolves (to the
// gateway) when the gateway would take a CONNECT to it on 443 or 80 for that sandbox,
// decided by the engine in force.
func (s *Server) allowName(q sandboxdns.NameQuery) sandboxdns.Verdict {
	id := rules.Identity{Tenant: q.Identity.Tenant, Class: q.Identity.Class, Run: q.Identity.Run}
	var reason string
	for _, port := range []int{443, 80} {
		d := s.policy.Decide(rules.Query{Identity: id, Host: q.Name, Port: port, Stage: rules.StageConnect})
		if d.Action != rules.Deny {
			return sandboxdns.Verdict{Allow: true}
		}
		if reason == "" {
			reason = d.Reason
		}
	}
	return sandboxdns.Verdict{Reason: reason}
}

// sandboxClaims is the runs' Sandboxes: the sources table.
type sandboxClaims struct{ t *sandboxdns.Table }

var _ runs.Sandboxes = sandboxClaims{}

func (c sandboxClaims) Claim(p netip.Prefix, id rules.Identity) error {
	return c.t.Claim(p, sandboxdns.Identity{Tenant: id.Tenant, Class: id.Class, Run: id.Run})
}

func (c sandboxClaims) Release(run string) { c.t.DeleteRun(run) }

// sandboxes is what runs register with; nil when nothing identifies sandboxes by
// address, so that a run naming one is refused rather than silently ignored.
func (s *Server) sandboxes() runs.Sandboxes {
	cfg := s.Config
	if cfg.Listen.DNS == "" && cfg.Listen.TransparentTLS == "" && cfg.Listen.TransparentHTTP == "" {
		return nil
	}
	return sandboxClaims{&s.sandbox.table}
}

// dnsEvents hands the resolver's refusals to the gateway's event sink as incidents of
// kind "dns": the query type goes in Method.
type dnsEvents struct{ sink gateway.EventSink }

func (d dnsEvents) Emit(ctx context.Context, e sandboxdns.Event) {
	if d.sink == nil {
		return
	}
	in := incident.Incident{Time: e.Time, Tenant: e.Tenant, Class: e.Class, Run: e.Run,
		Kind: e.Kind, Reason: e.Reason, Action: e.Action, Host: e.Host, Port: 53,
		Method: e.QType, Client: e.Client, Rule: e.Rule,
		// The doctor's names: counted, not stored (a name is no secret to tag).
		Probe: strings.HasPrefix(e.Host, probetag.DNSLabel) && e.Reason != sandboxdns.ReasonDataInName}
	if e.Suppressed > 0 {
		in.Snippet = strconv.FormatInt(e.Suppressed, 10) + " earlier refusals of this source not recorded"
	}
	d.sink.Emit(ctx, in)
}

// scannerLabels runs the scanner's detectors (secrets, canaries, phantoms) over a
// queried name: a secret spelt into a name is refused like one in a URL.
type scannerLabels struct{ h *scanner.Holder }

func (l scannerLabels) ScanName(name string) []sandboxdns.Finding {
	if l.h == nil {
		return nil
	}
	sc := l.h.Current()
	if sc == nil {
		return nil
	}
	fs, err := sc.ScanText(context.Background(), "dns-name", []byte(name))
	if err != nil {
		// Fail closed: a name the scanner could not read is not answered.
		return []sandboxdns.Finding{{Rule: "scan-error"}}
	}
	var out []sandboxdns.Finding
	for _, f := range fs {
		if f.Kind != scanner.KindOversize {
			out = append(out, sandboxdns.Finding{Rule: f.Rule})
		}
	}
	return out
}
