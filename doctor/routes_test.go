package doctor

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"strings"
	"testing"
)

// routeHex spells a in /proc/net/route's host byte order.
func routeHex(a string) string {
	b := netip.MustParseAddr(a).As4()
	return fmt.Sprintf("%08X", binary.NativeEndian.Uint32(b[:]))
}

func route(dst, gw, flags, mask string) string {
	return fmt.Sprintf("eth0\t%s\t%s\t%s\t0\t0\t0\t%s\t0\t0\t0\n", routeHex(dst), routeHex(gw), flags, routeHex(mask))
}

const routeHeader = "Iface\tDestination\tGateway\tFlags\tRefCnt\tUse\tMetric\tMask\tMTU\tWindow\tIRTT\n"

func TestParseBridgeGateways(t *testing.T) {
	tests := []struct {
		name  string
		table string
		want  []string
	}{
		{"default route", routeHeader + route("0.0.0.0", "172.17.0.1", "0003", "0.0.0.0") +
			route("172.17.0.0", "0.0.0.0", "0001", "255.255.0.0"), []string{"172.17.0.1"}},
		{"internal network: first address of the subnet",
			routeHeader + route("192.168.0.0", "0.0.0.0", "0001", "255.255.255.0"), []string{"192.168.0.1"}},
		{"header only", "Iface\tDestination\tGateway\n", nil},
		{"host route skipped", "h\n" + route("10.0.0.1", "0.0.0.0", "0005", "255.255.255.255"), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseBridgeGateways(strings.NewReader(tc.table))
			if err != nil {
				t.Fatal(err)
			}
			var s []string
			for _, a := range got {
				s = append(s, a.String())
			}
			if fmt.Sprint(s) != fmt.Sprint(tc.want) {
				t.Fatalf("got %v, want %v", s, tc.want)
			}
		})
	}
	if _, err := parseBridgeGateways(strings.NewReader("h\neth0\tzz\t00000000\t0\t0\t0\t0\t00000000\n")); err == nil {
		t.Error("a bad hex field parsed")
	}
}

// The doctor reads the table in the host's byte order, as the guard does: a
// table spelled in the other order names another gateway. (On a little-endian
// host this is the table of a big-endian one, and the other way round.)
func TestParseBridgeGatewaysHostOrder(t *testing.T) {
	b := netip.MustParseAddr("172.17.0.1").As4()
	other := binary.ByteOrder(binary.BigEndian)
	if binary.NativeEndian.Uint32(b[:]) == binary.BigEndian.Uint32(b[:]) {
		other = binary.LittleEndian
	}
	table := fmt.Sprintf("h\neth0\t00000000\t%08X\t0003\t0\t0\t0\t00000000\n", other.Uint32(b[:]))
	got, err := parseBridgeGateways(strings.NewReader(table))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].String() != "1.0.17.172" {
		t.Fatalf("got %v, want 1.0.17.172 (the foreign order's bytes, reversed)", got)
	}
}

func FuzzParseBridgeGateways(f *testing.F) {
	f.Add(routeHeader + route("0.0.0.0", "172.17.0.1", "0003", "0.0.0.0"))
	f.Add("h\neth0\tFFFFFFFF\t00000000\t0\t0\t0\t0\tFFFFFFFF\n")
	f.Fuzz(func(t *testing.T, s string) {
		gws, err := parseBridgeGateways(strings.NewReader(s))
		if err != nil {
			return
		}
		for _, a := range gws {
			if !a.Is4() || a.IsLoopback() {
				t.Fatalf("bad gateway %v", a)
			}
		}
	})
}
