package guard

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		addr   string
		denied bool
		why    string // substring of the reason; "" for allowed
	}{
		// Loopback, however spelled.
		{"127.0.0.1", true, WhyLoopback},
		{"127.1.2.3", true, WhyLoopback},
		{"::1", true, WhyLoopback},
		{"::ffff:127.0.0.1", true, WhyLoopback},
		{"::ffff:7f00:1", true, WhyLoopback},
		{"64:ff9b::7f00:1", true, "loopback (IPv4 127.0.0.1 embedded in a NAT64 address)"},
		{"64:ff9b::127.0.0.1", true, WhyLoopback},
		{"64:ff9b:1:7f00:0:100::", true, "loopback (IPv4 127.0.0.1 embedded in a local-use NAT64"}, // /48 layout
		{"64:ff9b:1:ff:a9:fea9:fe00::", true, WhyMetadata},                                         // /56 layout
		{"64:ff9b:1:0:a:0:500:0", true, WhyPrivate},                                                // /64 layout of 10.0.0.5
		{"64:ff9b:1::c6:3364:700:0", false, ""},                                                    // /64 layout of 198.51.100.7; its /96 reading 7.0.0.0 is public too
		{"64:ff9b:1::c633:6407", false, ""},                                                        // /96 layout of 198.51.100.7
		{"64:ff9b:1::7f00:1", true, WhyLoopback},                                                   // local-use NAT64, /96 layout
		{"2002:7f00:1::", true, "6to4"},
		{"::127.0.0.1", true, "IPv4-compatible"},
		{"::ffff:0:127.0.0.1", true, "IPv4-translated"},
		{"2001:0:7f00:1::", true, "Teredo"},
		// Metadata.
		{"169.254.169.254", true, WhyMetadata},
		{"::ffff:169.254.169.254", true, WhyMetadata},
		{"64:ff9b::a9fe:a9fe", true, WhyMetadata},
		{"2002:a9fe:a9fe::1", true, WhyMetadata},
		{"fd00:ec2::254", true, WhyMetadata},
		{"169.254.170.2", true, WhyMetadata},
		{"100.100.100.200", true, WhyMetadata},
		// Unspecified and "this network".
		{"0.0.0.0", true, WhyUnspecified},
		{"::", true, WhyUnspecified},
		{"::ffff:0.0.0.0", true, WhyUnspecified},
		{"0.1.2.3", true, "this network"},
		// Private and other special ranges.
		{"10.1.2.3", true, WhyPrivate},
		{"172.16.0.1", true, WhyPrivate},
		{"172.31.255.255", true, WhyPrivate},
		{"192.168.1.1", true, WhyPrivate},
		{"::ffff:192.168.1.1", true, WhyPrivate},
		{"100.64.0.1", true, "CGNAT"},
		{"169.254.1.1", true, WhyLinkLocal},
		{"fe80::1", true, WhyLinkLocal},
		{"fe80::1%eth0", true, WhyLinkLocal},
		{"fd12:3456::1", true, "unique local"},
		{"fc00::1", true, "unique local"},
		{"224.0.0.1", true, "multicast"},
		{"ff02::1", true, "multicast"},
		{"255.255.255.255", true, "broadcast"},
		{"240.0.0.1", true, "reserved"},
		{"198.18.0.1", true, "benchmarking"},
		{"198.19.255.255", true, "benchmarking"},
		{"192.0.0.8", true, "IETF protocol"},
		{"100::1", true, "discard"},
		{"2001:2::1", true, "IETF special-purpose"},
		// Allowed: documentation ranges (where tests put upstreams) and public
		// addresses. Classified only: nothing here is ever dialed.
		{"198.51.100.7", false, ""},
		{"203.0.113.9", false, ""},
		{"192.0.2.5", false, ""},
		{"2001:db8::1", false, ""},
		{"::ffff:198.51.100.7", false, ""},
		{"64:ff9b::c633:6407", false, ""}, // NAT64 of 198.51.100.7
		{"8.8.8.8", false, ""},
		{"172.32.0.1", false, ""},  // just past 172.16/12
		{"100.128.0.1", false, ""}, // just past 100.64/10
		{"198.20.0.1", false, ""},  // just past 198.18/15
		{"2606:4700::1111", false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			why, denied := Classify(netip.MustParseAddr(tt.addr), nil)
			if denied != tt.denied {
				t.Fatalf("Classify(%s) denied = %v (%q), want %v", tt.addr, denied, why, tt.denied)
			}
			if tt.denied && !strings.Contains(why, tt.why) {
				t.Errorf("Classify(%s) why = %q, want it to contain %q", tt.addr, why, tt.why)
			}
			if !tt.denied && why != "" {
				t.Errorf("Classify(%s) why = %q for an allowed address", tt.addr, why)
			}
		})
	}
}

func TestClassifyInvalid(t *testing.T) {
	if why, denied := Classify(netip.Addr{}, nil); !denied || why != WhyInvalid {
		t.Fatalf("Classify(zero Addr) = %q, %v; want %q, true", why, denied, WhyInvalid)
	}
}

// A custom deny list changes what is refused, except the addresses that are
// always refused.
func TestClassifyCustomDeny(t *testing.T) {
	noLoopback := withoutPrefix(DefaultDeny(), netip.MustParsePrefix("127.0.0.0/8"))
	tests := []struct {
		name   string
		addr   string
		deny   []netip.Prefix
		denied bool
	}{
		{"loopback re-opened", "127.0.0.1", noLoopback, false},
		{"mapped loopback re-opened", "::ffff:127.0.0.1", noLoopback, false},
		{"private still denied", "10.0.0.1", noLoopback, true},
		{"empty deny opens private", "10.0.0.1", []netip.Prefix{}, false},
		{"metadata always denied", "169.254.169.254", []netip.Prefix{}, true},
		{"v6 metadata always denied", "fd00:ec2::254", []netip.Prefix{}, true},
		{"NAT64 metadata always denied", "64:ff9b::a9fe:a9fe", []netip.Prefix{}, true},
		{"unspecified always denied", "0.0.0.0", []netip.Prefix{}, true},
		{"v6 unspecified always denied", "::", []netip.Prefix{}, true},
		{"custom range", "198.51.100.7", []netip.Prefix{netip.MustParsePrefix("198.51.100.0/24")}, true},
		{"custom mapped range", "198.51.100.7", []netip.Prefix{netip.MustParsePrefix("::ffff:198.51.100.0/120")}, true},
		{"custom range miss", "198.51.101.7", []netip.Prefix{netip.MustParsePrefix("198.51.100.0/24")}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			why, denied := Classify(netip.MustParseAddr(tt.addr), tt.deny)
			if denied != tt.denied {
				t.Fatalf("Classify(%s) denied = %v (%q), want %v", tt.addr, denied, why, tt.denied)
			}
		})
	}
	if why, _ := Classify(netip.MustParseAddr("198.51.100.7"), []netip.Prefix{netip.MustParsePrefix("198.51.100.0/24")}); !strings.Contains(why, "198.51.100.0/24") {
		t.Errorf("why for a custom range = %q, want it to name the range", why)
	}
}

func TestDefaultDeny(t *testing.T) {
	deny := DefaultDeny()
	for _, want := range []string{
		"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
		"172.16.0.0/12", "192.0.0.0/24", "192.168.0.0/16", "198.18.0.0/15", "224.0.0.0/4",
		"240.0.0.0/4", "::/128", "::1/128", "fe80::/10", "fc00::/7", "ff00::/8",
		"100::/64", "2001::/23",
	} {
		if !slices.Contains(deny, netip.MustParsePrefix(want)) {
			t.Errorf("DefaultDeny() lacks %s", want)
		}
	}
	// The documentation ranges must stay open: tests place upstreams there.
	for _, doc := range []string{"192.0.2.0", "198.51.100.0", "203.0.113.0", "2001:db8::"} {
		a := netip.MustParseAddr(doc)
		for _, p := range deny {
			if p.Contains(a) {
				t.Errorf("DefaultDeny() range %s covers documentation address %s", p, a)
			}
		}
	}
	// The caller owns the slice: changing it must not change the default.
	deny[0] = netip.MustParsePrefix("198.51.100.0/24")
	if _, denied := Classify(netip.MustParseAddr("198.51.100.1"), nil); denied {
		t.Error("modifying DefaultDeny()'s result changed the default")
	}
}

func withoutPrefix(ps []netip.Prefix, drop netip.Prefix) []netip.Prefix {
	return slices.DeleteFunc(ps, func(p netip.Prefix) bool { return p == drop })
}

// FuzzClassify checks that an IPv4 address and its IPv4-mapped IPv6 form are
// classified alike, that every NAT64 form of a denied IPv4 address is denied,
// and that Classify never panics.
func FuzzClassify(f *testing.F) {
	for _, s := range []string{"127.0.0.1", "::ffff:127.0.0.1", "64:ff9b::a9fe:a9fe", "2002:7f00:1::", "8.8.8.8", "::", "fe80::1", "2001:db8::1"} {
		b := netip.MustParseAddr(s).As16()
		f.Add(b[:])
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var a16 [16]byte
		copy(a16[:], b)
		a := netip.AddrFrom16(a16)
		Classify(a, nil)
		Classify(a, []netip.Prefix{})
		Classify(a.WithZone("eth0"), nil)

		v4 := netip.AddrFrom4([4]byte(a16[12:]))
		mapped := netip.AddrFrom16([16]byte{10: 0xff, 11: 0xff, 12: a16[12], 13: a16[13], 14: a16[14], 15: a16[15]})
		why4, denied4 := Classify(v4, nil)
		whyM, deniedM := Classify(mapped, nil)
		if why4 != whyM || denied4 != deniedM {
			t.Fatalf("Classify(%s) = %q, %v but Classify(%s) = %q, %v", v4, why4, denied4, mapped, whyM, deniedM)
		}
		if denied4 {
			nat64 := netip.AddrFrom16([16]byte{0: 0, 1: 0x64, 2: 0xff, 3: 0x9b, 12: a16[12], 13: a16[13], 14: a16[14], 15: a16[15]})
			if _, denied := Classify(nat64, nil); !denied {
				t.Fatalf("Classify(%s) allowed, but its embedded %s is denied", nat64, v4)
			}
			sixToFour := netip.AddrFrom16([16]byte{0: 0x20, 1: 0x02, 2: a16[12], 3: a16[13], 4: a16[14], 5: a16[15], 15: 1})
			if _, denied := Classify(sixToFour, nil); !denied {
				t.Fatalf("Classify(%s) allowed, but its embedded %s is denied", sixToFour, v4)
			}
		}
	})
}

// An ISATAP address (RFC 5214) carries an IPv4 address in its interface
// identifier, behind any /64 prefix, public ones included: a router of that
// prefix forwards to the IPv4 address, so it is checked as well.
func TestClassifyISATAP(t *testing.T) {
	tests := []struct {
		addr   string
		denied bool
		why    string
	}{
		{"2001:db8:1:2:0:5efe:7f00:1", true, "loopback (IPv4 127.0.0.1 embedded in a ISATAP"},
		{"2001:db8:1:2:200:5efe:7f00:1", true, WhyLoopback}, // u bit set: a global IPv4
		{"2001:db8::5efe:10.1.2.3", true, WhyPrivate},
		{"2606:4700:1:2:200:5efe:a9fe:a9fe", true, WhyMetadata},
		{"2001:db8:1:2:100:5efe:c0a8:101", true, WhyPrivate}, // group bit: still read, fail closed
		{"2001:db8:1:2:0:5efe:c633:6407", false, ""},         // 198.51.100.7: documentation, allowed
		{"2001:db8:1:2:0:5eff:7f00:1", false, ""},            // not the ISATAP identifier
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			why, denied := Classify(netip.MustParseAddr(tt.addr), nil)
			if denied != tt.denied {
				t.Fatalf("Classify(%s) denied = %v (%q), want %v", tt.addr, denied, why, tt.denied)
			}
			if !strings.Contains(why, tt.why) {
				t.Errorf("Classify(%s) why = %q, want it to contain %q", tt.addr, why, tt.why)
			}
		})
	}
}
