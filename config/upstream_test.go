package config

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestUpstreamRoots(t *testing.T) {
	dir := t.TempDir()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "upstream test root"},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	os.WriteFile(filepath.Join(dir, "up.pem"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(filepath.Join(dir, "empty.pem"), []byte("no PEM here\n"), 0o600)
	c := &Config{Path: filepath.Join(dir, "sluice.yaml"), Upstream: Upstream{ExtraRoots: []string{"up.pem"}}}
	pool, err := c.UpstreamRoots()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: pool}); err != nil {
		t.Fatalf("the extra root is not in the pool: %v", err)
	}
	for _, bad := range []string{"missing.pem", "empty.pem"} {
		c.Upstream.ExtraRoots = []string{bad}
		if _, err := c.UpstreamRoots(); err == nil || !strings.Contains(err.Error(), "upstream.extra_roots") {
			t.Errorf("%s: %v, want an upstream.extra_roots error", bad, err)
		}
	}
}
