package config

import (
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestUpstreamDeny: upstream.deny reaches the dialer as ranges, single
// addresses and IPv4-mapped spellings included.
func TestUpstreamDeny(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sluice.yaml")
	os.WriteFile(filepath.Join(dir, "acme.token"), []byte("token\n"), 0o600)
	os.WriteFile(path, []byte(`upstream:
  deny: [198.51.100.0/24, 203.0.113.9, "::ffff:192.0.2.0/120", 2001:db8:dead::/48]
tenants:
  acme:
    token_file: acme.token
`), 0o600)
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []netip.Prefix{netip.MustParsePrefix("198.51.100.0/24"), netip.MustParsePrefix("203.0.113.9/32"),
		netip.MustParsePrefix("192.0.2.0/24"), netip.MustParsePrefix("2001:db8:dead::/48")}
	if got := c.Upstream.DenyRanges(); !slices.Equal(got, want) {
		t.Fatalf("DenyRanges() = %v, want %v", got, want)
	}
	if got := (Upstream{}).DenyRanges(); got != nil {
		t.Fatalf("no upstream.deny: %v, want none", got)
	}
}
