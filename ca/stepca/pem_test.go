package stepca

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"
)

func TestParseKeyPEM(t *testing.T) {
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sec1, _ := x509.MarshalECPrivateKey(ec)
	pkcs8, _ := x509.MarshalPKCS8PrivateKey(ec)
	for name, der := range map[string][]byte{"sec1": sec1, "pkcs8": pkcs8} {
		k, err := ParseKeyPEM(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
		if err != nil || !k.Equal(ec) {
			t.Errorf("%s: %v", name, err)
		}
	}
	r, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	rsaDER, _ := x509.MarshalPKCS8PrivateKey(r)
	for name, b := range map[string][]byte{
		"rsa":    pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: rsaDER}),
		"no pem": []byte("not a key"),
	} {
		_, err := ParseKeyPEM(b)
		if err == nil {
			t.Errorf("%s: parsed", name)
		} else if strings.Contains(err.Error(), "PRIVATE KEY") {
			t.Errorf("%s: error shows the key: %v", name, err)
		}
	}
	if _, err := ParseRootPEM(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: sec1})); err == nil {
		t.Error("a key parsed as the root certificate")
	}
}

// LoadFiles names the file that failed, as the config calls it.
func TestLoadFilesNamesTheFile(t *testing.T) {
	dir := t.TempDir()
	var c Client
	if err := c.LoadFiles(dir+"/missing-root.pem", dir+"/key.pem"); err == nil || !strings.HasPrefix(err.Error(), "root_file: ") {
		t.Fatalf("missing root: %v", err)
	}
}
