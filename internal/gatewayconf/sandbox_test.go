package gatewayconf

import (
	"net/netip"
	"testing"

	"github.com/sluice-egress/sluice/config"
	"github.com/sluice-egress/sluice/rules"
	"github.com/sluice-egress/sluice/sandboxdns"
)

// dns.sources reach the table with the default class filled in; the
// resolver exists only with listen.dns, in the mode dns.mode names.
func TestSandbox(t *testing.T) {
	cfg := &config.Config{}
	cfg.DNS.Sources = []config.DNSSource{{CIDR: "10.244.0.0/16", Tenant: "acme"}, {CIDR: "10.9.0.7", Tenant: "globex", Class: "ci"}}
	m := Sources(cfg)
	if m[netip.MustParsePrefix("10.244.0.0/16")] != (sandboxdns.Identity{Tenant: "acme", Class: rules.DefaultClass}) ||
		m[netip.MustParsePrefix("10.9.0.7/32")] != (sandboxdns.Identity{Tenant: "globex", Class: "ci"}) || len(m) != 2 {
		t.Errorf("Sources = %v", m)
	}
	if Resolver(cfg, nil) != nil {
		t.Error("a resolver without listen.dns")
	}
	cfg.Listen.DNS = "127.0.0.1:0"
	if r := Resolver(cfg, nil); r == nil || r.Mode != sandboxdns.Explicit {
		t.Errorf("default mode: %+v", r)
	}
	cfg.DNS.Mode = config.DNSModeTransparent
	if r := Resolver(cfg, nil); r.Mode != sandboxdns.Transparent {
		t.Errorf("transparent: %v", r.Mode)
	}
}
