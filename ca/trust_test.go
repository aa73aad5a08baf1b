package ca

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// certs parses every CERTIFICATE block in b.
func certs(tb testing.TB, b []byte) []*x509.Certificate {
	tb.Helper()
	var out []*x509.Certificate
	for {
		var block *pem.Block
		block, b = pem.Decode(b)
		if block == nil {
			return out
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, c)
	}
}

func contains(cs []*x509.Certificate, c *x509.Certificate) bool {
	return slices.ContainsFunc(cs, c.Equal)
}

func TestExport(t *testing.T) {
	s := newStore(t)
	a := MustAuthority(t, s, "acme")
	// Fake system roots: two other CAs, the last without a trailing newline.
	r1, r2 := MustAuthority(t, s, "root1"), MustAuthority(t, s, "root2")
	rootsFile := filepath.Join(t.TempDir(), "roots.pem")
	roots := append(r1.CertPEM(), bytes.TrimRight(r2.CertPEM(), "\n")...)
	if err := os.WriteFile(rootsFile, roots, 0o644); err != nil {
		t.Fatal(err)
	}

	t.Run("with SSL_CERT_FILE", func(t *testing.T) {
		t.Setenv("SSL_CERT_FILE", rootsFile)
		out := filepath.Join(t.TempDir(), "trust", "acme")
		caPath, bundlePath, err := a.Export(out)
		if err != nil {
			t.Fatal(err)
		}
		if caPath != filepath.Join(out, "ca.pem") || bundlePath != filepath.Join(out, "bundle.pem") {
			t.Errorf("paths = %s, %s", caPath, bundlePath)
		}
		caPEM, _ := os.ReadFile(caPath)
		if got := certs(t, caPEM); len(got) != 1 || !got[0].Equal(a.Certificate()) {
			t.Error("ca.pem is not the tenant CA alone")
		}
		bundle, _ := os.ReadFile(bundlePath)
		got := certs(t, bundle)
		if len(got) != 3 || !contains(got, a.Certificate()) || !contains(got, r1.Certificate()) || !contains(got, r2.Certificate()) {
			t.Errorf("bundle holds %d certs, want system roots + tenant CA", len(got))
		}
		for path, want := range map[string]os.FileMode{out: 0o755, caPath: 0o644, bundlePath: 0o644} {
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != want {
				t.Errorf("%s mode %o, want %o", path, fi.Mode().Perm(), want)
			}
		}
		// Exporting again overwrites in place.
		if _, _, err := a.Export(out); err != nil {
			t.Fatalf("second export: %v", err)
		}
		if entries, _ := os.ReadDir(out); len(entries) != 2 {
			t.Errorf("out dir holds %d entries, want 2", len(entries))
		}
	})

	t.Run("machine roots", func(t *testing.T) {
		t.Setenv("SSL_CERT_FILE", "")
		sys, err := SystemRootsPEM()
		if errors.Is(err, ErrNoSystemRoots) {
			t.Skip("no system root store on this machine")
		}
		if err != nil {
			t.Fatal(err)
		}
		_, bundlePath, err := a.Export(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		bundle, _ := os.ReadFile(bundlePath)
		got := certs(t, bundle)
		if len(got) != len(certs(t, sys))+1 || !contains(got, a.Certificate()) {
			t.Errorf("bundle holds %d certs, want %d system roots + tenant CA", len(got), len(certs(t, sys)))
		}
	})

	t.Run("no system roots", func(t *testing.T) {
		t.Setenv("SSL_CERT_FILE", filepath.Join(t.TempDir(), "missing.pem"))
		saved := systemRootFiles
		systemRootFiles = []string{filepath.Join(t.TempDir(), "nope.pem")}
		defer func() { systemRootFiles = saved }()
		if _, err := SystemRootsPEM(); !errors.Is(err, ErrNoSystemRoots) {
			t.Fatalf("SystemRootsPEM err = %v, want ErrNoSystemRoots", err)
		}
		_, bundlePath, err := a.Export(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		bundle, _ := os.ReadFile(bundlePath)
		if !bytes.Equal(bundle, a.CertPEM()) {
			t.Error("bundle without system roots is not the tenant CA alone")
		}
	})
}

func TestSystemRootsOrder(t *testing.T) {
	dir := t.TempDir()
	a := MustAuthority(t, newStore(t), "acme")
	empty := filepath.Join(dir, "empty.pem")
	good := filepath.Join(dir, "good.pem")
	later := filepath.Join(dir, "later.pem")
	_ = os.WriteFile(empty, []byte("no certificates here\n"), 0o644)
	_ = os.WriteFile(good, a.CertPEM(), 0o644)
	_ = os.WriteFile(later, []byte("-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----\n"), 0o644)
	got, err := firstRoots([]string{filepath.Join(dir, "missing"), empty, good, later})
	if err != nil || !bytes.Equal(got, a.CertPEM()) {
		t.Errorf("firstRoots = %q, %v; want the first file holding a certificate", got, err)
	}
}

func TestTrustEnv(t *testing.T) {
	got := TrustEnv("/sluice/ca.pem", "/sluice/bundle.pem")
	want := []string{
		"AWS_CA_BUNDLE=/sluice/bundle.pem",
		"CARGO_HTTP_CAINFO=/sluice/bundle.pem",
		"CURL_CA_BUNDLE=/sluice/bundle.pem",
		"DENO_CERT=/sluice/bundle.pem",
		"GIT_SSL_CAINFO=/sluice/bundle.pem",
		"NODE_EXTRA_CA_CERTS=/sluice/ca.pem",
		"NPM_CONFIG_CAFILE=/sluice/bundle.pem",
		"PIP_CERT=/sluice/bundle.pem",
		"REQUESTS_CA_BUNDLE=/sluice/bundle.pem",
		"SSL_CERT_FILE=/sluice/bundle.pem",
		"YARN_HTTPS_CA_FILE_PATH=/sluice/bundle.pem",
	}
	if !slices.Equal(got, want) {
		t.Errorf("TrustEnv =\n%q\nwant\n%q", got, want)
	}
	if again := TrustEnv("/sluice/ca.pem", "/sluice/bundle.pem"); !slices.Equal(again, got) {
		t.Error("TrustEnv is not deterministic")
	}
}
