package main

import (
	"github.com/sluice-egress/sluice/config"
	"github.com/sluice-egress/sluice/internal/gatewayconf"
	"github.com/sluice-egress/sluice/internal/probetag"
	"github.com/sluice-egress/sluice/internal/sandboxnet"
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
	sn.Table.SetStatic(gatewayconf.Sources(cfg))
	sn.Resolver = gatewayconf.Resolver(cfg, s.Logger)
	s.sandbox = sn
	return sn.Open()
}

// reloadSandbox applies a reloaded config's dns.sources (the resolver's other
// settings are config.RestartOnly).
func (s *Server) reloadSandbox(cfg *config.Config) {
	if s.sandbox != nil {
		s.sandbox.Table.SetStatic(gatewayconf.Sources(cfg))
	}
}

// DNSAddr is the bound resolver address ("" when off), useful with port 0.
func (s *Server) DNSAddr() string {
	if s.sandbox == nil {
		return ""
	}
	return s.sandbox.DNSAddr()
}
