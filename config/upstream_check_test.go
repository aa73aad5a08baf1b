package config

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An upstream.hosts mapping the gateway would refuse to dial is refused at
// check time, with the line and the runtime's reason; a routable one is not,
// unless it is one of the gateway's own addresses.
func TestCheckUpstreamHosts(t *testing.T) {
	t.Setenv("SLUICE_TEST_CC_TOKEN", "a-test-token-that-is-long-enough")
	write := func(hosts string) string {
		p := filepath.Join(t.TempDir(), "sluice.yaml")
		os.WriteFile(p, []byte("data_dir: data\nupstream:\n  hosts:\n"+hosts+
			"tenants:\n  acme:\n    token_env: SLUICE_TEST_CC_TOKEN\n    classes: {agent: {allow: [{host: internal.example.test}]}}\n"), 0o600)
		return p
	}
	for _, tc := range []struct{ hosts, want string }{
		{"    internal.example.test: 127.0.0.1\n", "sluice.yaml:4: upstream.hosts.internal.example.test: maps internal.example.test to 127.0.0.1: the gateway refuses to dial it (loopback)"},
		{"    internal.example.test: \"::ffff:127.0.0.2\"\n", "(loopback)"},
		{"    internal.example.test: 169.254.169.254\n", "(cloud metadata)"},
		{"    internal.example.test: 0.0.0.0\n", "refuses to dial it"},
	} {
		cfg, err := Load(write(tc.hosts))
		if err != nil {
			t.Fatal(err)
		}
		if err := cfg.CheckUpstreamHosts(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v", strings.TrimSpace(tc.hosts), err)
		}
	}
	cfg, err := Load(write("    internal.example.test: 192.0.2.7\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := checkUpstreamHosts(cfg, nil); err != nil {
		t.Errorf("a routable mapping: %v", err)
	}
	err = checkUpstreamHosts(cfg, []netip.Addr{netip.MustParseAddr("192.0.2.7")})
	if err == nil || !strings.Contains(err.Error(), "gateway's own address") {
		t.Errorf("own address: %v", err)
	}
}
