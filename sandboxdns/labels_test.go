package sandboxdns

import (
	"crypto/sha256"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"net/netip"
	"strings"
	"testing"
)

func TestLabelCheck(t *testing.T) {
	// What a tunnel sends is compressed or encrypted: bytes that look random. (Base32 of
	// plain text switches between letters and digits rarely and passes unless long; the
	// scanner's detector, plugged in as Labels, may be stricter.)
	sum := sha256.Sum256([]byte("fake-secret-for-sandboxdns-tests"))
	payload := sum[:]
	b32 := strings.ToLower(strings.TrimRight(base32.StdEncoding.EncodeToString(payload[:20]), "="))
	b64 := base64.RawURLEncoding.EncodeToString(payload[:18])
	cases := []struct {
		name string
		want string // rule, "" for none
	}{
		// Names people choose.
		{"www.example.test", ""},
		{"api.example.test", ""},
		{"objects.githubusercontent.example.test", ""},
		{"eu-west-1.storage.example.test", ""},
		{"download-mirror-frankfurt-02.example.test", ""},
		{"d1a2b3c4e5f6g7.cdn.example.test", ""}, // a CDN's short distribution id
		{"ip-10-0-0-1.internal.example.test", ""},
		{"v2.api.example.test", ""},
		{"_acme-challenge.example.test", ""},
		{"a1b2c3d4e5f6a7b8.example.test", ""}, // 16 hex: below MinHex and MinEncoded
		{"build-2024-07-01-x86.example.test", ""},
		{"a1b2c3d4e5f6a7b8c9d0.example.test", RuleLabelEntropy},   // 20 hex: below MinHex, dense
		{"12345678901234567890123456.example.test", RuleLabelHex}, // digits alone
		// Data.
		{hex.EncodeToString(payload[:16]) + ".example.test", RuleLabelHex},
		{"550e8400-e29b-41d4-a716-446655440000.example.test", RuleLabelHex},
		{b32 + ".example.test", RuleLabelEntropy},
		{b64 + ".example.test", RuleLabelEntropy},
		{strings.Repeat("abcdefgh", 7) + ".example.test", RuleLabelLong},
		{strings.Repeat("abcdefghij.", 16) + "example.test", RuleNameLong},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := LabelCheck{}.ScanName(c.name)
			if c.want == "" {
				if len(fs) != 0 {
					t.Fatalf("findings %v in a plain name", fs)
				}
				return
			}
			for _, f := range fs {
				if f.Rule == c.want {
					return
				}
			}
			t.Fatalf("findings %v, want rule %s", fs, c.want)
		})
	}
	t.Run("thresholds are tunable", func(t *testing.T) {
		long := strings.Repeat("abcdefgh", 7) + ".example.test"
		if fs := (LabelCheck{MaxLabel: 63}).ScanName(long); len(fs) != 0 {
			t.Errorf("MaxLabel 63: %v", fs)
		}
		if fs := (LabelCheck{MinHex: 16}).ScanName("a1b2c3d4e5f6a7b8.example.test"); len(fs) == 0 {
			t.Error("MinHex 16 did not flag 16 hex digits")
		}
	})
}

func TestRedactName(t *testing.T) {
	h := hex.EncodeToString([]byte("0123456789abcdef"))
	cases := []struct {
		name     string
		findings []Finding
		want     string
	}{
		{"www.example.test", nil, "www.example.test"},
		{h + ".example.test", nil, "{redacted}.example.test"}, // the default check, unasked
		{"canary.example.test", []Finding{{Rule: "x", Label: "canary"}}, "{redacted}.example.test"},
		{"a.b.c.d.example.test", []Finding{{Rule: RuleNameLong}}, "{redacted}.example.test"},
	}
	for _, c := range cases {
		if got := redactName(c.name, c.findings); got != c.want {
			t.Errorf("redactName(%q) = %q, want %q", c.name, got, c.want)
		}
	}
}

func TestNormalizeName(t *testing.T) {
	cases := map[string]string{
		"WWW.Example.TEST.":    "www.example.test",
		"_dmarc.example.test.": "_dmarc.example.test",
		`a\.b.example.test.`:   "",
		`a\032b.test.`:         "",
		".":                    "",
		"":                     "",
		"a..b.":                "",
	}
	for in, want := range cases {
		got, ok := normalizeName(in)
		if got != want || ok != (want != "") {
			t.Errorf("normalizeName(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
}

func TestTable(t *testing.T) {
	var tb Table
	net := netip.MustParsePrefix("10.77.0.0/16")
	one := netip.MustParsePrefix("10.77.1.2/32")
	tb.Set(net, Identity{Tenant: "static"})
	tb.Set(one, Identity{Tenant: "acme", Run: "r1"})
	tb.Set(netip.MustParsePrefix("::ffff:10.78.0.1/128"), Identity{Tenant: "mapped"})
	for addr, want := range map[string]string{
		"10.77.1.2":        "acme", // the run's /32 beats the network
		"::ffff:10.77.1.2": "acme", // as a dual-stack socket shows it
		"10.77.9.9":        "static",
		"10.78.0.1":        "mapped",
		"10.79.0.1":        "",
		"2001:db8::1":      "",
	} {
		id, ok := tb.Lookup(netip.MustParseAddr(addr))
		if id.Tenant != want || ok != (want != "") {
			t.Errorf("Lookup(%s) = %v, %v; want %q", addr, id, ok, want)
		}
	}
	tb.DeleteIdentity(Identity{Tenant: "acme", Run: "r1"})
	if id, _ := tb.Lookup(netip.MustParseAddr("10.77.1.2")); id.Tenant != "static" {
		t.Errorf("after the run ended: %v, want the network's tenant", id)
	}
	tb.Delete(net)
	if _, ok := tb.Lookup(netip.MustParseAddr("10.77.1.2")); ok {
		t.Error("deleted prefix still matches")
	}
}
