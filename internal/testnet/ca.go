package testnet

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCA is a throwaway CA for the upstream servers of a test; it is not Sluice's CA. The
// gateway under test trusts it as an extra root; nothing else does.
type TestCA struct {
	// Cert is the CA certificate.
	Cert *x509.Certificate
	// CertPEM is Cert, PEM-encoded.
	CertPEM []byte

	name string
	key  *ecdsa.PrivateKey
}

// NewTestCA creates a CA named name (used in its subject and file name).
func NewTestCA(t testing.TB, name string) *TestCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("testnet: CA key: %v", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: randSerial(t),
		Subject:      pkix.Name{CommonName: name + " test CA", Organization: []string{"sluice testnet"}},
		// Backdated so that a clock a little behind still accepts it.
		NotBefore: now.Add(-time.Hour),
		// A day outlives any test run; the key is thrown away anyway.
		NotAfter: now.Add(24 * time.Hour),
		// Certificate signing is all a CA does.
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		// Leaves only: no intermediates under a test CA.
		MaxPathLen:     0,
		MaxPathLenZero: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatalf("testnet: CA certificate: %v", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("testnet: parse CA certificate: %v", err)
	}
	return &TestCA{
		Cert:    cert,
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		name:    name,
		key:     key,
	}
}

// randSerial returns a random 128-bit serial number, as RFC 5280 recommends for uniqueness.
func randSerial(t testing.TB) *big.Int {
	t.Helper()
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		t.Fatalf("testnet: serial: %v", err)
	}
	return n
}

// Pool returns a certificate pool holding only the CA.
func (c *TestCA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(c.Cert)
	return p
}

// ServerTLS returns a server configuration with a fresh leaf for names: IP literals become IP
// SANs, everything else DNS SANs. It offers h2 and http/1.1.
func (c *TestCA) ServerTLS(t testing.TB, names ...string) *tls.Config {
	t.Helper()
	if len(names) == 0 {
		t.Fatalf("testnet: ServerTLS needs at least one name")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("testnet: leaf key: %v", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: randSerial(t),
		Subject:      pkix.Name{CommonName: names[0]},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		// ECDSA keys sign the handshake; they never encrypt.
		KeyUsage: x509.KeyUsageDigitalSignature,
		// A TLS server certificate and nothing else.
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	for _, n := range names {
		if a, err := netip.ParseAddr(n); err == nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, a.AsSlice())
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.Cert, &key.PublicKey, c.key)
	if err != nil {
		t.Fatalf("testnet: leaf certificate: %v", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("testnet: parse leaf: %v", err)
	}
	return &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}},
		NextProtos:   []string{"h2", "http/1.1"},
		MinVersion:   tls.VersionTLS12,
	}
}

// WritePEM writes the CA certificate to dir (a new temporary directory when dir is empty) and
// returns the file's path, for curl --cacert, git http.sslCAInfo or Sluice's extra roots.
func (c *TestCA) WritePEM(t testing.TB, dir string) string {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	safe := strings.Map(func(r rune) rune {
		if r == '.' || r == '-' || r == '_' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' {
			return r
		}
		return '_'
	}, c.name)
	path := filepath.Join(dir, safe+"-ca.pem")
	if err := os.WriteFile(path, c.CertPEM, 0o644); err != nil {
		t.Fatalf("testnet: write CA: %v", err)
	}
	return path
}
