package config

import (
	"strings"
	"testing"
)

const dnsTenants = `
tenants:
  acme:
    token_env: ACME_TOKEN
    classes:
      agent: {}
`

func TestDNSConfig(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		wantErr string // "" for none; else a substring
	}{
		{"absent: off", "version: 1\n", ""},
		{"explicit with addrs", "listen:\n  dns: 0.0.0.0:5353\ndns:\n  addrs: [10.96.0.53]\n  sources:\n    - {cidr: 10.244.0.0/16, tenant: acme}\n" + dnsTenants, ""},
		{"a specific address needs no addrs", "listen:\n  dns: 127.0.0.1:5353\n", ""},
		{"transparent", "listen:\n  dns: 127.0.0.1:53\n  transparent_tls: :8443\n  transparent_http: :8081\ndns:\n  mode: transparent\n  ttl: 1m\n  queries_per_second: 10\n  burst: 20\n", ""},
		{"all addresses without addrs", "listen:\n  dns: 0.0.0.0:5353\n", "sluice.yaml: dns.addrs: listen.dns listens on all addresses"},
		{"empty host without addrs", "listen:\n  dns: :5353\n", "dns.addrs: listen.dns listens on all addresses"},
		{"a name as listen address", "listen:\n  dns: gateway:5353\n", "sluice.yaml:2: listen.dns: want an IP address"},
		{"bad listen address", "listen:\n  transparent_tls: 8443\n", "sluice.yaml:2: listen.transparent_tls: bad address"},
		{"bad mode", "dns:\n  mode: sneaky\n", "sluice.yaml:2: dns.mode: got \"sneaky\""},
		{"transparent without its listeners", "dns:\n  mode: transparent\n", "sluice.yaml:2: dns.mode: transparent answers"},
		{"bad name", "dns:\n  names: [sluice.internal, \"*.x.test\"]\n", "sluice.yaml:2: dns.names[1]: bad name"},
		{"bad addr", "dns:\n  addrs:\n    - 10.0.0.1\n    - nope\n", "sluice.yaml:4: dns.addrs[1]: bad address \"nope\""},
		{"unspecified addr", "dns:\n  addrs: [0.0.0.0]\n", "dns.addrs[0]: bad address"},
		{"negative ttl", "dns:\n  ttl: -1s\n", "sluice.yaml:2: dns.ttl: bad duration"},
		{"negative rate", "dns:\n  queries_per_second: -1\n", "dns.queries_per_second"},
		{"rate not a number", "dns:\n  queries_per_second: lots\n", "sluice.yaml:2: dns.queries_per_second"},
		{"unknown key", "dns:\n  forwarders: [1.1.1.1]\n", "sluice.yaml:2: dns.forwarders: unknown key"},
		{"unknown source key", "dns:\n  sources:\n    - {cidr: 10.0.0.0/8, tenant: acme, run: x}\n" + dnsTenants, "sluice.yaml:3: dns.sources[0].run: unknown key"},
		{"bad cidr", "dns:\n  sources:\n    - cidr: 10.0.0.0/33\n      tenant: acme\n" + dnsTenants, "sluice.yaml:3: dns.sources[0].cidr: bad cidr"},
		{"duplicate cidr", "dns:\n  sources:\n    - {cidr: 10.0.0.0/8, tenant: acme}\n    - {cidr: 10.1.0.0/8, tenant: acme}\n" + dnsTenants, "sluice.yaml:4: dns.sources[1].cidr: 10.0.0.0/8 is already dns.sources[0]"},
		{"unknown tenant", "dns:\n  sources:\n    - {cidr: 10.0.0.0/8, tenant: other}\n" + dnsTenants, "dns.sources[0].tenant: no tenant \"other\""},
		{"no tenant", "dns:\n  sources:\n    - {cidr: 10.0.0.0/8}\n", "dns.sources[0].tenant: required"},
		{"unknown class", "dns:\n  sources:\n    - {cidr: 10.0.0.9, tenant: acme, class: ci}\n" + dnsTenants, "dns.sources[0].class: tenant acme has no class \"ci\""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.yaml), "sluice.yaml")
			if err == nil {
				err = c.Validate()
			}
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestDNSSourcePrefix(t *testing.T) {
	for in, want := range map[string]string{"10.1.2.3": "10.1.2.3/32", "10.1.2.3/16": "10.1.0.0/16", "fd00::1": "fd00::1/128"} {
		p, err := DNSSource{CIDR: in}.Prefix()
		if err != nil || p.String() != want {
			t.Errorf("%s: %v %v, want %s", in, p, err, want)
		}
	}
	for _, bad := range []string{"", "x", "fe80::1%eth0", "10.0.0.0/40"} {
		if _, err := (DNSSource{CIDR: bad}).Prefix(); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestDNSModeOrDefault(t *testing.T) {
	if got := (DNS{}).ModeOrDefault(); got != DNSModeExplicit {
		t.Errorf("empty mode: %q", got)
	}
	if got := (DNS{Mode: DNSModeTransparent}).ModeOrDefault(); got != DNSModeTransparent {
		t.Errorf("transparent: %q", got)
	}
}
