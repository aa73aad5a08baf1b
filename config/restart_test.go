package config

import (
	"slices"
	"testing"
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
		{"body", func(c *Config) { c.Scanning.MaxBodyBytes++ }, []string{"scanning.max_body_bytes"}},
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
