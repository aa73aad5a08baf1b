package sandboxdns

import (
	"net"
	"strconv"
)

// Listen binds UDP and TCP on the same port of addr (host:port): with port
// 0, the one UDP got (retried a few times when TCP has it taken).
func Listen(addr string) (net.PacketConn, net.Listener, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, nil, err
	}
	for try := 0; ; try++ {
		pc, err := net.ListenPacket("udp", addr)
		if err != nil {
			return nil, nil, err
		}
		bound := strconv.Itoa(pc.LocalAddr().(*net.UDPAddr).Port)
		ln, err := net.Listen("tcp", net.JoinHostPort(host, bound))
		if err == nil {
			return pc, ln, nil
		}
		pc.Close()
		if port != "0" || try == 4 {
			return nil, nil, err
		}
	}
}
