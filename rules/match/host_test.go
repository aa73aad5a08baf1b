package match

import (
	"errors"
	"strings"
	"testing"
)

func TestNormalizeHost(t *testing.T) {
	long63 := strings.Repeat("a", 63)
	tests := []struct {
		name, in, want string
		wantErr        bool
	}{
		{name: "plain", in: "api.example.test", want: "api.example.test"},
		{name: "upper case", in: "API.Example.TEST", want: "api.example.test"},
		{name: "trailing dot", in: "api.example.test.", want: "api.example.test"},
		{name: "two trailing dots", in: "api.example.test..", wantErr: true},
		{name: "only a dot", in: ".", wantErr: true},
		{name: "leading dot", in: ".example.test", wantErr: true},
		{name: "empty label", in: "a..example.test", wantErr: true},
		{name: "empty", in: "", wantErr: true},
		{name: "idn", in: "bücher.example.test", want: "xn--bcher-kva.example.test"},
		{name: "idn upper", in: "BÜCHER.example.test", want: "xn--bcher-kva.example.test"},
		{name: "punycode kept", in: "xn--bcher-kva.example.test", want: "xn--bcher-kva.example.test"},
		{name: "punycode upper", in: "XN--BCHER-KVA.example.test", want: "xn--bcher-kva.example.test"},
		{name: "bad punycode", in: "xn--zz.example.test", wantErr: true},
		{name: "fullwidth dot", in: "example\uff0etest", want: "example.test"},
		{name: "sharp s nontransitional", in: "ß.example.test", want: "xn--zca.example.test"},
		{name: "zero width joiner", in: "x\u200dy.example.test", wantErr: true},
		{name: "underscore", in: "a_b.example.test", wantErr: true},
		{name: "space", in: "a b.example.test", wantErr: true},
		{name: "star", in: "*.example.test", wantErr: true},
		{name: "port", in: "example.test:443", wantErr: true},
		{name: "slash", in: "example.test/x", wantErr: true},
		{name: "at", in: "user@example.test", wantErr: true},
		{name: "nul", in: "example.test\x00", wantErr: true},
		{name: "hyphen start", in: "-a.example.test", wantErr: true},
		{name: "hyphen end", in: "a-.example.test", wantErr: true},
		{name: "label 63", in: long63 + ".test", want: long63 + ".test"},
		{name: "label 64", in: long63 + "a.test", wantErr: true},
		{name: "name too long", in: strings.Repeat(long63+".", 4) + "test", wantErr: true},
		{name: "ipv4", in: "192.0.2.1", want: "192.0.2.1"},
		{name: "ipv4 trailing dot", in: "192.0.2.1.", want: "192.0.2.1"},
		{name: "ipv4 leading zero", in: "192.0.2.01", wantErr: true},
		{name: "ipv4 octal-looking", in: "0177.0.0.1", wantErr: true},
		{name: "ipv4 short", in: "127.1", wantErr: true},
		{name: "ipv4 decimal", in: "2130706433", wantErr: true},
		{name: "ipv4 hex", in: "0x7f.0.0.1", wantErr: true},
		{name: "hex last label", in: "example.0x7f", wantErr: true},
		{name: "numeric last label", in: "example.123", wantErr: true},
		{name: "numeric inner label ok", in: "123.example.test", want: "123.example.test"},
		{name: "ipv6 bracketed", in: "[2001:DB8::1]", want: "2001:db8::1"},
		{name: "ipv6 bare", in: "2001:db8:0:0:0:0:0:1", want: "2001:db8::1"},
		{name: "ipv6 zone", in: "fe80::1%eth0", wantErr: true},
		{name: "ipv6 zone bracketed", in: "[fe80::1%25eth0]", wantErr: true},
		{name: "v4-mapped bracketed", in: "[::ffff:127.0.0.1]", want: "127.0.0.1"},
		{name: "v4-mapped hex", in: "::ffff:7f00:1", want: "127.0.0.1"},
		{name: "ipv4 in brackets", in: "[127.0.0.1]", wantErr: true},
		{name: "unbalanced bracket", in: "[::1", wantErr: true},
		{name: "brackets with port", in: "[::1]:443", wantErr: true},
		{name: "name in brackets", in: "[example.test]", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NormalizeHost(tt.in)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("NormalizeHost(%q) = %q, want error", tt.in, got)
				}
				if !errors.Is(err, ErrBadHost) {
					t.Errorf("error %v does not wrap ErrBadHost", err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("NormalizeHost(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestParseHostPattern(t *testing.T) {
	tests := []struct {
		in, want string // want "" means error
	}{
		{"api.example.test", "api.example.test"},
		{"API.example.test.", "api.example.test"},
		{"*.example.test", "*.example.test"},
		{"*.Bücher.example.test", "*.xn--bcher-kva.example.test"},
		{"*.githubusercontent.com", "*.githubusercontent.com"}, // private-section suffix
		{"*.example.com", "*.example.com"},
		{"*.example.co.uk", "*.example.co.uk"},
		{"192.0.2.1", "192.0.2.1"},
		{"[2001:db8::1]", "2001:db8::1"},
		{"2001:db8::1", "2001:db8::1"},
		{"*", ""},
		{"*.", ""},
		{"*.com", ""},
		{"*.test", ""},
		{"*.co.uk", ""},
		{"*.com.", ""},
		{"**.example.test", ""},
		{"*.*.example.test", ""},
		{"api.*.example.test", ""},
		{"*api.example.test", ""},
		{"*.192.0.2.1", ""},
		{"https://api.example.test", ""},
		{"api.example.test:443", ""},
		{"*.example.test:443", ""},
		{"[2001:db8::1]:443", ""},
		{"api.example.test/v1", ""},
		{"user@api.example.test", ""},
		{"", ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			p, err := ParseHostPattern(tt.in)
			if tt.want == "" {
				if err == nil {
					t.Fatalf("ParseHostPattern(%q) = %v, want error", tt.in, p)
				}
				return
			}
			if err != nil || p.String() != tt.want {
				t.Fatalf("ParseHostPattern(%q) = %v, %v; want %q", tt.in, p, err, tt.want)
			}
		})
	}
}

func TestHostPatternMatch(t *testing.T) {
	wild, _ := ParseHostPattern("*.example.test")
	exact, _ := ParseHostPattern("api.example.test")
	ip, _ := ParseHostPattern("192.0.2.1")
	// A suffix that an IP literal ends with: only reachable by building it by hand, and it
	// must still not match an IP.
	numeric := HostPattern{suffix: ".0.2.1"}
	tests := []struct {
		name string
		p    HostPattern
		host string
		want bool
	}{
		{"wild one label", wild, "a.example.test", true},
		{"wild deep", wild, "a.b.c.example.test", true},
		{"wild apex", wild, "example.test", false},
		{"wild lookalike", wild, "evilexample.test", false},
		{"wild other", wild, "example.test.evil.test", false},
		{"exact", exact, "api.example.test", true},
		{"exact sub", exact, "x.api.example.test", false},
		{"ip", ip, "192.0.2.1", true},
		{"ip other", ip, "192.0.2.2", false},
		{"wildcard never matches ip", numeric, "192.0.2.1", false},
		{"zero pattern", HostPattern{}, "api.example.test", false},
		{"zero pattern empty host", HostPattern{}, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.p.Match(tt.host); got != tt.want {
				t.Errorf("%v.Match(%q) = %v, want %v", tt.p, tt.host, got, tt.want)
			}
		})
	}
}

func TestHost(t *testing.T) {
	tests := []struct {
		pattern, host string
		want          bool
	}{
		{"*.example.test", "a.example.test", true},
		{"*.example.test", "A.Example.TEST.", true},
		{"*.Example.test.", "a.example.test", true},
		{"api.example.test", "API.example.test", true},
		{"bücher.example.test", "xn--bcher-kva.example.test", true},
		{"*.example.test", "example.test", false},
		{"*.example.test", "evilexample.test", false},
		{"api.example.test", "x.api.example.test", false},
		{"192.0.2.1", "192.0.2.1", true},
		{"192.0.2.1", "[::ffff:192.0.2.1]", true},
		// Patterns the config refuses match nothing, rather than too much.
		{"*.test", "a.test", false},
		{"*", "a.example.test", false},
		{"", "", false},
		{"api.example.test", "", false},
		{"api.example.test", "api.example.test:443", false},
		{"0x7f.1", "0x7f.1", false},
	}
	for _, tt := range tests {
		if got := Host(tt.pattern, tt.host); got != tt.want {
			t.Errorf("Host(%q, %q) = %v, want %v", tt.pattern, tt.host, got, tt.want)
		}
	}
}

func TestHostPatternCovers(t *testing.T) {
	mustParse := func(s string) HostPattern {
		p, err := ParseHostPattern(s)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		p, q string
		want bool
	}{
		{"*.example.test", "api.example.test", true},
		{"*.example.test", "*.a.example.test", true},
		{"*.example.test", "*.example.test", true},
		{"*.a.example.test", "*.example.test", false},
		{"api.example.test", "*.example.test", false},
		{"api.example.test", "api.example.test", true},
		{"*.example.test", "*.xexample.test", false},
		{"*.example.test", "example.test", false},
		{"192.0.2.1", "192.0.2.1", true},
	}
	for _, tt := range tests {
		if got := mustParse(tt.p).Covers(mustParse(tt.q)); got != tt.want {
			t.Errorf("%s covers %s = %v, want %v", tt.p, tt.q, got, tt.want)
		}
	}
}

// The fast path answers exactly as the long way, and only for names in normal form.
func FuzzNormalizeHostFastPath(f *testing.F) {
	for _, s := range []string{
		"api.example.test", "api.example.test.", "a", "a.b-c.d1", "ab--cd.test", "xn--bcher-kva.test",
		"xn--abc.test", "1.2.3.4", "1.2.3.4.", "0x7f.1", "a.0x7f", "a.0xg", "a.123", "a.1a", "a-.b", "-a.b",
		"a..b", ".a", "a.", "a..", "A.test", "a_b.test", "a.b:443", strings.Repeat("a", 63) + ".test",
		strings.Repeat("a", 64) + ".test", strings.Repeat("a.", 126) + "b", strings.Repeat("a.", 127) + "b",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		name := strings.TrimSuffix(in, ".")
		if !isNormalName(name) {
			return
		}
		out, err := normalizeHost(in)
		if err != nil || out != name {
			t.Fatalf("fast path takes %q as %q; the long way says %q, %v", in, name, out, err)
		}
	})
}

// Names the fast path must leave to the long way: not in normal form, or refused.
func TestNormalNameLeavesTheRestToTheLongWay(t *testing.T) {
	for _, s := range []string{
		"", "A.test", "ab--cd.test", "xn--bcher-kva.test", "1.2.3.4", "0x7f.1", "a.123", "a.0xff", "a-.b", "-a.b",
		"a..b", ".a", "a.b:443", "a_b.test", "bücher.test", strings.Repeat("a", 64) + ".test",
		strings.Repeat("a.", 127) + "b",
	} {
		if isNormalName(s) {
			t.Errorf("isNormalName(%q) = true", s)
		}
	}
	for _, s := range []string{"api.example.test", "a", "a.b-c.d1", "a.1a", "a.0xg", strings.Repeat("a", 63) + ".test",
		strings.Repeat("a.", 126) + "b"} {
		if !isNormalName(s) {
			t.Errorf("isNormalName(%q) = false", s)
		}
	}
}

func BenchmarkNormalizeHost(b *testing.B) {
	for _, h := range []string{"api.example.test", "API.Example.Test", "bücher.example.test"} {
		b.Run(h, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := NormalizeHost(h); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func FuzzNormalizeHost(f *testing.F) {
	for _, s := range []string{
		"api.example.test", "API.EXAMPLE.TEST.", "bücher.example.test", "xn--bcher-kva.test",
		"[::ffff:127.0.0.1]", "192.0.2.1", "0x7f.1", "a..b", "ß.test", "example\uff0etest",
		"[fe80::1%25eth0]", "İ.test", "\u00ad.test",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out, err := NormalizeHost(in)
		if err != nil {
			return
		}
		if out == "" {
			t.Fatalf("NormalizeHost(%q) = empty, no error", in)
		}
		if strings.ToLower(out) != out {
			t.Fatalf("NormalizeHost(%q) = %q has upper case", in, out)
		}
		again, err := NormalizeHost(out)
		if err != nil || again != out {
			t.Fatalf("not idempotent: NormalizeHost(%q) = %q, then %q, %v", in, out, again, err)
		}
		for _, c := range []byte(out) {
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == ':') {
				t.Fatalf("NormalizeHost(%q) = %q holds %q", in, out, c)
			}
		}
	})
}
