package ca

import (
	"crypto/tls"
	"net"
	"strconv"
	"testing"
)

func BenchmarkLeafCold(b *testing.B) {
	a := MustAuthority(b, newStore(b), "acme")
	i := 0
	for b.Loop() {
		i++
		if _, err := a.Leaf("h" + strconv.Itoa(i) + ".example.test"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLeafWarm(b *testing.B) {
	a := MustAuthority(b, newStore(b), "acme")
	MustLeaf(b, a, "warm.example.test")
	for b.Loop() {
		if _, err := a.Leaf("warm.example.test"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHandshakeECDSA measures a full TLS 1.3 handshake (no resumption)
// with a cached leaf over net.Pipe.
func BenchmarkHandshakeECDSA(b *testing.B) {
	a := MustAuthority(b, newStore(b), "acme")
	MustLeaf(b, a, "a.example.test")
	srvCfg := &tls.Config{
		GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
			return a.Leaf(hello.ServerName)
		},
		SessionTicketsDisabled: true,
	}
	cliCfg := &tls.Config{RootCAs: MustPool(b, a), ServerName: "a.example.test"}
	for b.Loop() {
		c1, c2 := net.Pipe()
		errc := make(chan error, 1)
		go func() { errc <- tls.Server(c1, srvCfg).Handshake() }()
		if err := tls.Client(c2, cliCfg).Handshake(); err != nil {
			b.Fatal(err)
		}
		if err := <-errc; err != nil {
			b.Fatal(err)
		}
		c1.Close()
		c2.Close()
	}
}
