package main

import (
	"net/netip"
	"time"

	"github.com/sluice-egress/sluice/config"
	"github.com/sluice-egress/sluice/internal/probetag"
	"github.com/sluice-egress/sluice/internal/sandboxnet"
	"github.com/sluice-egress/sluice/sandboxdns"
)

// openSandbox binds the resolver (listen.dns) and the transparent listeners
// (listen.transparent_*), each only when configured, and fills the sources
// table from dns.sources.
func (s *Server) openSandbox() error {
	cfg := s.Config
	sn := &sandboxnet.Net{
		DNS: cfg.Listen.DNS, TransparentTLS: cfg.Listen.TransparentTLS, TransparentHTTP: cfg.Listen.TransparentHTTP,
		Policy: s.policy, Scanner: s.scanner, Gateway: s.gw, Logger: s.Logger,
		ProbeKey: func(tenant string) []byte {
			a, err := s.cas.Authority(tenant)
			if err != nil {
				return nil
			}
			return probetag.KeyFromCA(a.Certificate().Raw)
		},
	}
	sn.Table.SetStatic(staticSources(cfg))
	if cfg.Listen.DNS != "" {
		mode := sandboxdns.Explicit
		if cfg.DNS.Mode == config.DNSModeTransparent {
			mode = sandboxdns.Transparent
		}
		sn.Resolver = &sandboxdns.Server{Mode: mode, Names: cfg.DNS.Names, Addrs: cfg.DNS.AddrList(),
			TTL: time.Duration(cfg.DNS.TTL), Logger: s.Logger,
			QueriesPerSecond: cfg.DNS.QueriesPerSecond, Burst: cfg.DNS.Burst}
	}
	s.sandbox = sn
	return sn.Open()
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

// reloadSandbox applies a reloaded config's dns.sources (the resolver's other
// settings are config.RestartOnly).
func (s *Server) reloadSandbox(cfg *config.Config) {
	if s.sandbox != nil {
		s.sandbox.Table.SetStatic(staticSources(cfg))
	}
}

// dnsMode is dns.mode as announced.
func (s *Server) dnsMode() string {
	if s.Config.DNS.Mode == "" {
		return config.DNSModeExplicit
	}
	return s.Config.DNS.Mode
}

// DNSAddr is the bound resolver address ("" when off), useful with port 0.
func (s *Server) DNSAddr() string {
	if s.sandbox == nil {
		return ""
	}
	return s.sandbox.DNSAddr()
}
