package config

import (
	"slices"
	"testing"
	"time"
)

func TestRestartOnly(t *testing.T) {
	tests := []struct {
		name   string
		change func(c *Config)
		want   []string
	}{
		{"nothing", func(*Config) {}, nil},
		{"tenants and upstream apply live", func(c *Config) {
			c.Upstream.Hosts = map[string]string{"a.example.test": "192.0.2.1"}
			c.Tenants["other"] = &Tenant{TokenEnv: "OTHER"}
		}, nil},
		{"listen", func(c *Config) { c.Listen.Proxy = "127.0.0.1:1" }, []string{"listen"}},
		{"ca", func(c *Config) { c.CA.PassphraseEnv = "PASS" }, []string{"ca"}},
		{"inflight", func(c *Config) { c.Scanning.MaxInflightBytes++ }, []string{"scanning.max_inflight_bytes"}},
		{"body limit applies live", func(c *Config) {
			c.Scanning.MaxBodyBytes++
			c.Scanning.OnOversize = OnOversizeForward
		}, nil},
		{"store", func(c *Config) { c.Store.IncidentTimeout = Duration(time.Second) }, []string{"store.incident_timeout"}},
		{"limits", func(c *Config) {
			c.Limits.MaxConnsPerClient = 10
			c.Limits.KeepaliveIdleTimeout = Duration(time.Minute)
		}, []string{"limits.keepalive_idle_timeout", "limits.max_conns_per_client"}},
		{"http2", func(c *Config) { c.HTTP2.Disable = true }, []string{"http2.disable"}},
		{"tls", func(c *Config) { c.TLS.SandboxKeyExchange = KeyExchangeClassical }, []string{"tls.sandbox_key_exchange"}},
		{"dns but its sources", func(c *Config) {
			c.DNS.Sources = []DNSSource{{CIDR: "10.0.0.0/8", Tenant: "default"}}
			c.DNS.Names = []string{"gw.example.test"}
		}, []string{"dns.names"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			next := Default()
			tc.change(next)
			if got := Default().RestartOnly(next); !slices.Equal(got, tc.want) {
				t.Fatalf("RestartOnly = %v, want %v", got, tc.want)
			}
		})
	}
	var none *Config
	if got := none.RestartOnly(Default()); got != nil {
		t.Fatalf("nil config: %v", got)
	}
}
