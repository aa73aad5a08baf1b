package guard

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"strings"
	"testing"
)

// spell writes a as /proc/net/route does on a host of the given byte order.
func spell(a string, order binary.ByteOrder) string {
	b := netip.MustParseAddr(a).As4()
	return fmt.Sprintf("%08X", order.Uint32(b[:]))
}

func routeLine(order binary.ByteOrder, dst, gw, mask string, flags int) string {
	return fmt.Sprintf("eth0\t%s\t%s\t%04X\t0\t0\t0\t%s\t0\t0\t0\n", spell(dst, order), spell(gw, order), flags, spell(mask, order))
}

// The table's byte order is the host's: the same route spelled for a
// little-endian and for a big-endian host parses to the same addresses only
// when the parser is told which it reads.
func TestParseRoutesV4ByteOrder(t *testing.T) {
	for _, order := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
		t.Run(fmt.Sprint(order), func(t *testing.T) {
			text := "Iface\tDestination\tGateway\tFlags\tRefCnt\tUse\tMetric\tMask\tMTU\tWindow\tIRTT\n" +
				routeLine(order, "0.0.0.0", "172.17.0.1", "0.0.0.0", 3) +
				routeLine(order, "172.17.0.0", "0.0.0.0", "255.255.0.0", 1)
			got, err := parseRoutesV4(strings.NewReader(text), order)
			if err != nil {
				t.Fatal(err)
			}
			want := []RouteV4{
				{Iface: "eth0", Dst: netip.MustParseAddr("0.0.0.0"), Gateway: netip.MustParseAddr("172.17.0.1"),
					Mask: netip.MustParseAddr("0.0.0.0"), Flags: 3},
				{Iface: "eth0", Dst: netip.MustParseAddr("172.17.0.0"), Gateway: netip.MustParseAddr("0.0.0.0"),
					Mask: netip.MustParseAddr("255.255.0.0"), Flags: 1},
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("got %v\nwant %v", got, want)
			}
			if !got[0].IsDefaultGateway() || got[1].IsDefaultGateway() {
				t.Errorf("IsDefaultGateway: %v, %v", got[0].IsDefaultGateway(), got[1].IsDefaultGateway())
			}
			// Read in the other order, the same text names other hosts.
			other := binary.ByteOrder(binary.BigEndian)
			if order == binary.BigEndian {
				other = binary.LittleEndian
			}
			wrong, err := parseRoutesV4(strings.NewReader(text), other)
			if err != nil {
				t.Fatal(err)
			}
			if wrong[0].Gateway == got[0].Gateway {
				t.Errorf("the byte order made no difference: %v", wrong[0].Gateway)
			}
		})
	}
}

// ParseRoutesV4 reads the host's own order, as the kernel writes it: the
// table this machine would print parses back to the addresses it was made of.
func TestParseRoutesV4NativeOrder(t *testing.T) {
	text := "header\n" + routeLine(binary.NativeEndian, "0.0.0.0", "10.1.2.3", "0.0.0.0", RTFGateway)
	got, err := ParseRoutesV4(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Gateway != netip.MustParseAddr("10.1.2.3") {
		t.Fatalf("got %v, want the gateway 10.1.2.3", got)
	}
	if _, err := ParseRoutesV4(strings.NewReader("header\neth0 00000000 zz 0003 0 0 0 00000000\n")); err == nil {
		t.Error("a bad gateway field parsed")
	}
	if _, err := ParseRoutesV4(strings.NewReader("header\neth0 00000000 00000000 xyz 0 0 0 00000000\n")); err == nil {
		t.Error("a bad flags field parsed")
	}
}

func FuzzParseRoutesV4(f *testing.F) {
	f.Add("header\n" + routeLine(binary.NativeEndian, "0.0.0.0", "172.17.0.1", "0.0.0.0", 3))
	f.Add("h\neth0\tFFFFFFFF\t00000000\t0\t0\t0\t0\tFFFFFFFF\n")
	f.Fuzz(func(t *testing.T, s string) {
		rs, err := ParseRoutesV4(strings.NewReader(s))
		if err != nil {
			return
		}
		for _, r := range rs {
			if !r.Dst.Is4() || !r.Gateway.Is4() || !r.Mask.Is4() {
				t.Fatalf("not IPv4: %+v", r)
			}
		}
	})
}
