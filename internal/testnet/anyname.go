package testnet

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"
)

// ServerTLSAnyName returns a server configuration that presents, for
// whatever name a client asks for by SNI, a leaf for that name signed by the
// CA (minted on first use and kept): an upstream that stands in for many
// hosts, or for names nobody could list in advance. It offers h2 and
// http/1.1.
func (c *TestCA) ServerTLSAnyName(t testing.TB) *tls.Config {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("testnet: leaf key: %v", err)
	}
	var mu sync.Mutex
	leaves := map[string]*tls.Certificate{}
	return &tls.Config{
		NextProtos: []string{"h2", "http/1.1"},
		MinVersion: tls.VersionTLS12,
		GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
			name := strings.ToLower(hello.ServerName)
			if name == "" {
				return nil, errors.New("testnet: no SNI")
			}
			mu.Lock()
			defer mu.Unlock()
			if l, ok := leaves[name]; ok {
				return l, nil
			}
			serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
			if err != nil {
				return nil, err
			}
			now := time.Now()
			tmpl := &x509.Certificate{
				SerialNumber: serial,
				Subject:      pkix.Name{CommonName: name},
				NotBefore:    now.Add(-time.Hour),
				NotAfter:     now.Add(24 * time.Hour),
				// As ServerTLS: ECDSA signs the handshake, a server certificate only.
				KeyUsage:              x509.KeyUsageDigitalSignature,
				ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
				BasicConstraintsValid: true,
			}
			if a, err := netip.ParseAddr(name); err == nil {
				tmpl.IPAddresses = append(tmpl.IPAddresses, a.AsSlice())
			} else {
				tmpl.DNSNames = []string{name}
			}
			der, err := x509.CreateCertificate(rand.Reader, tmpl, c.Cert, &key.PublicKey, c.key)
			if err != nil {
				return nil, err
			}
			leaf, err := x509.ParseCertificate(der)
			if err != nil {
				return nil, err
			}
			l := &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
			leaves[name] = l
			return l, nil
		},
	}
}
