package sandboxdns

import (
	"net"
	"testing"
)

// With port 0, UDP and TCP get the same port: sandboxes are told one address.
func TestListenSamePort(t *testing.T) {
	pc, ln, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	defer ln.Close()
	if u, c := pc.LocalAddr().(*net.UDPAddr).Port, ln.Addr().(*net.TCPAddr).Port; u != c || u == 0 {
		t.Fatalf("udp port %d, tcp port %d", u, c)
	}
	if _, _, err := Listen("no-port"); err == nil {
		t.Fatal("an address without a port was bound")
	}
}
