package gatewayconf

import (
	"log/slog"
	"net/netip"
	"time"

	"github.com/sluice-egress/sluice/config"
	"github.com/sluice-egress/sluice/sandboxdns"
)

// Resolver is the sandboxes' resolver of the dns: keys; nil without
// listen.dns.
func Resolver(cfg *config.Config, logger *slog.Logger) *sandboxdns.Server {
	if cfg.Listen.DNS == "" {
		return nil
	}
	mode := sandboxdns.Explicit
	if cfg.DNS.Mode == config.DNSModeTransparent {
		mode = sandboxdns.Transparent
	}
	return &sandboxdns.Server{Mode: mode, Names: cfg.DNS.Names, Addrs: cfg.DNS.AddrList(),
		TTL: time.Duration(cfg.DNS.TTL), Logger: logger,
		QueriesPerSecond: cfg.DNS.QueriesPerSecond, Burst: cfg.DNS.Burst}
}

// Sources is dns.sources as the sandboxes' table holds them.
func Sources(cfg *config.Config) map[netip.Prefix]sandboxdns.Identity {
	m := map[netip.Prefix]sandboxdns.Identity{}
	for _, src := range cfg.DNS.Sources {
		if p, err := src.Prefix(); err == nil { // Validate has checked it
			m[p] = sandboxdns.Identity{Tenant: src.Tenant, Class: src.ClassOrDefault()}
		}
	}
	return m
}
