package guard

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"net/netip"
	"strconv"
	"strings"
)

// RTFGateway is RTF_GATEWAY from <linux/route.h>: the route goes via a router.
const RTFGateway = 0x2

// RouteV4 is one line of the kernel's IPv4 route table.
type RouteV4 struct {
	Iface string
	// Dst, Gateway and Mask are the route's destination, next hop (0.0.0.0
	// when directly connected) and netmask.
	Dst, Gateway, Mask netip.Addr
	// Flags are the RTF_* flags (RTFGateway, …).
	Flags uint32
}

// IsDefaultGateway reports whether the route is a default route via a router.
func (r RouteV4) IsDefaultGateway() bool {
	return r.Dst.IsUnspecified() && r.Mask.IsUnspecified() && r.Flags&RTFGateway != 0 && !r.Gateway.IsUnspecified()
}

// ParseRoutesV4 reads a route table in the format of /proc/net/route: a
// header line, then whitespace-separated fields Iface Destination Gateway
// Flags RefCnt Use Metric Mask ...; lines with fewer fields are skipped, a
// field that is not hex is an error. The kernel prints each address as the
// hex of its 32-bit value in host byte order (it is a __be32 printed with
// %08X), so the bytes are recovered with the machine's own order: on a
// little-endian host 010011AC is 172.17.0.1, on a big-endian one AC110001 is.
func ParseRoutesV4(r io.Reader) ([]RouteV4, error) {
	return parseRoutesV4(r, binary.NativeEndian)
}

func parseRoutesV4(r io.Reader, order binary.ByteOrder) ([]RouteV4, error) {
	var out []RouteV4
	sc := bufio.NewScanner(r)
	first := true
	for sc.Scan() {
		if first {
			first = false
			continue // header
		}
		f := strings.Fields(sc.Text())
		if len(f) < 8 {
			continue
		}
		dst, err1 := routeAddr(f[1], order)
		gw, err2 := routeAddr(f[2], order)
		flags, err3 := strconv.ParseUint(f[3], 16, 32)
		mask, err4 := routeAddr(f[7], order)
		if err := errors.Join(err1, err2, err3, err4); err != nil {
			return nil, err
		}
		out = append(out, RouteV4{Iface: f[0], Dst: dst, Gateway: gw, Mask: mask, Flags: uint32(flags)})
	}
	return out, sc.Err()
}

func routeAddr(s string, order binary.ByteOrder) (netip.Addr, error) {
	v, err := strconv.ParseUint(s, 16, 32)
	if err != nil {
		return netip.Addr{}, err
	}
	var b [4]byte
	order.PutUint32(b[:], uint32(v))
	return netip.AddrFrom4(b), nil
}
