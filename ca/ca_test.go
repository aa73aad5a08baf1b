package ca

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestAuthorityCreate(t *testing.T) {
	s := newStore(t)
	clk := newClock()
	s.Now = clk.Now
	a := MustAuthority(t, s, "acme")
	c := a.Certificate()

	if a.Tenant() != "acme" {
		t.Errorf("Tenant() = %q", a.Tenant())
	}
	if got, want := c.Subject.CommonName, "Sluice acme CA"; got != want {
		t.Errorf("CommonName = %q, want %q", got, want)
	}
	if !c.BasicConstraintsValid || !c.IsCA {
		t.Error("root is not a CA")
	}
	if c.MaxPathLen != 0 || !c.MaxPathLenZero {
		t.Errorf("MaxPathLen = %d, MaxPathLenZero = %v; want 0, true", c.MaxPathLen, c.MaxPathLenZero)
	}
	if want := x509.KeyUsageCertSign | x509.KeyUsageCRLSign; c.KeyUsage != want {
		t.Errorf("KeyUsage = %v, want %v", c.KeyUsage, want)
	}
	if len(c.ExtKeyUsage) != 0 {
		t.Errorf("ExtKeyUsage = %v, want none", c.ExtKeyUsage)
	}
	pub, ok := c.PublicKey.(*ecdsa.PublicKey)
	if !ok || pub.Curve != elliptic.P256() {
		t.Errorf("public key = %T, want ECDSA P-256", c.PublicKey)
	}
	if c.SerialNumber.Sign() <= 0 || c.SerialNumber.BitLen() > 128 || c.SerialNumber.BitLen() < 64 {
		t.Errorf("serial %x: want a random positive 128-bit number", c.SerialNumber)
	}
	if len(c.SubjectKeyId) != 20 {
		t.Errorf("SubjectKeyId = %x, want 20 bytes", c.SubjectKeyId)
	}
	now := clk.Now()
	if d := c.NotAfter.Sub(now.AddDate(10, 0, 0)); d < -time.Second || d > 0 {
		t.Errorf("NotAfter = %v, want about 10 years after %v", c.NotAfter, now)
	}
	if c.NotBefore.After(now) {
		t.Errorf("NotBefore %v is after now %v", c.NotBefore, now)
	}
	if err := c.CheckSignatureFrom(c); err != nil {
		t.Errorf("root is not self-signed: %v", err)
	}

	dir := filepath.Join(s.Dir, "acme")
	for _, tc := range []struct {
		path string
		mode os.FileMode
	}{
		{s.Dir, 0o700},
		{dir, 0o700},
		{filepath.Join(dir, KeyFile), 0o600},
	} {
		fi, err := os.Stat(tc.path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != tc.mode {
			t.Errorf("%s: mode %o, want %o", tc.path, fi.Mode().Perm(), tc.mode)
		}
	}
	keyPEM, err := os.ReadFile(filepath.Join(dir, KeyFile))
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(keyPEM)
	if block == nil || block.Type != "PRIVATE KEY" {
		t.Fatalf("key file is not plain PKCS#8 PEM")
	}
	if _, err := x509.ParsePKCS8PrivateKey(block.Bytes); err != nil {
		t.Errorf("key file: %v", err)
	}
	certPEM, err := os.ReadFile(filepath.Join(dir, CertFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(certPEM, a.CertPEM()) {
		t.Error("ca.pem differs from CertPEM()")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("tenant dir holds %d entries, want 2 (no temp files left)", len(entries))
	}

	if again := MustAuthority(t, s, "acme"); again != a {
		t.Error("second Authority call returned another CA")
	}
}

func TestAuthorityReload(t *testing.T) {
	s1 := newStore(t)
	a1 := MustAuthority(t, s1, "acme")
	b1 := MustAuthority(t, s1, "beta")
	if a1.Fingerprint() == b1.Fingerprint() {
		t.Fatal("two tenants share a CA")
	}
	s2 := newStore(t)
	s2.Dir = s1.Dir
	a2 := MustAuthority(t, s2, "acme")
	if a2.Fingerprint() != a1.Fingerprint() {
		t.Errorf("reloaded CA fingerprint %s, want %s", a2.Fingerprint(), a1.Fingerprint())
	}
	// The loaded key signs leaves that chain to the original root.
	leaf := MustLeaf(t, a2, "a.example.test")
	if err := verify(leaf, MustPool(t, a1), "a.example.test", time.Now()); err != nil {
		t.Errorf("leaf from reloaded CA: %v", err)
	}
}

func TestAuthorityConcurrentCreate(t *testing.T) {
	s := newStore(t)
	const n = 20
	got := make([]*Authority, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			a, err := s.Authority("acme")
			if err != nil {
				t.Error(err)
			}
			got[i] = a
		})
	}
	close(start)
	wg.Wait()
	for i, a := range got {
		if a != got[0] {
			t.Fatalf("call %d got a different CA", i)
		}
	}
	s2 := newStore(t)
	s2.Dir = s.Dir
	if MustAuthority(t, s2, "acme").Fingerprint() != got[0].Fingerprint() {
		t.Error("CA on disk is not the one handed out")
	}
}

func TestAuthorityEncrypted(t *testing.T) {
	s := newStore(t)
	s.Passphrase = []byte("correct horse battery staple")
	a := MustAuthority(t, s, "acme")

	keyPath := filepath.Join(s.Dir, "acme", KeyFile)
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(keyPEM)
	if block == nil || block.Type != "ENCRYPTED PRIVATE KEY" {
		t.Fatalf("key file block is not ENCRYPTED PRIVATE KEY")
	}
	if _, err := x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
		t.Fatal("encrypted key file parses as a plain key")
	}

	t.Run("right passphrase", func(t *testing.T) {
		s2 := newStore(t)
		s2.Dir, s2.Passphrase = s.Dir, []byte("correct horse battery staple")
		if got := MustAuthority(t, s2, "acme").Fingerprint(); got != a.Fingerprint() {
			t.Errorf("fingerprint %s, want %s", got, a.Fingerprint())
		}
	})
	for _, tc := range []struct {
		name string
		pass []byte
		want string
	}{
		{"wrong passphrase", []byte("wrong"), keyPath},
		{"no passphrase", nil, "encrypted"},
		{"empty passphrase", []byte{}, "empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s2 := newStore(t)
			s2.Dir, s2.Passphrase = s.Dir, tc.pass
			_, err := s2.Authority("acme")
			if err == nil {
				t.Fatal("want an error")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not mention %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "correct horse") {
				t.Error("error leaks the passphrase")
			}
		})
	}
	t.Run("plain key with passphrase", func(t *testing.T) {
		plain := newStore(t)
		MustAuthority(t, plain, "acme")
		plain.Passphrase = []byte("x")
		s2 := newStore(t)
		s2.Dir, s2.Passphrase = plain.Dir, []byte("x")
		if _, err := s2.Authority("acme"); err == nil || !strings.Contains(err.Error(), "not encrypted") {
			t.Errorf("err = %v, want 'not encrypted'", err)
		}
	})
}

func TestTenantValidation(t *testing.T) {
	for _, tc := range []struct {
		tenant string
		ok     bool
	}{
		{"a", true},
		{"acme", true},
		{"acme-2", true},
		{"0", true},
		{strings.Repeat("a", 63), true},
		{"", false},
		{strings.Repeat("a", 64), false},
		{"Acme", false},
		{"a.b", false},
		{"..", false},
		{"../x", false},
		{"a/b", false},
		{`a\b`, false},
		{"-a", false},
		{"a-", false},
		{"a b", false},
		{"a\x00", false},
		{"acmé", false},
	} {
		t.Run(tc.tenant, func(t *testing.T) {
			s := newStore(t)
			_, err := s.Authority(tc.tenant)
			if tc.ok != (err == nil) {
				t.Fatalf("Authority(%q) err = %v, want ok=%v", tc.tenant, err, tc.ok)
			}
			if !tc.ok {
				if !errors.Is(err, ErrInvalidTenant) {
					t.Errorf("err = %v, want ErrInvalidTenant", err)
				}
				if _, err := os.Stat(s.Dir); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("invalid tenant touched the disk: %v", err)
				}
				if _, err := s.Rotate(tc.tenant); !errors.Is(err, ErrInvalidTenant) {
					t.Errorf("Rotate err = %v, want ErrInvalidTenant", err)
				}
			}
		})
	}
}

func TestStoreRequiresDir(t *testing.T) {
	s := &Store{}
	if _, err := s.Authority("acme"); err == nil {
		t.Fatal("Store without Dir: want an error")
	}
}

func TestCorruptFiles(t *testing.T) {
	other := newStore(t)
	otherKey, err := os.ReadFile(filepath.Join(MustAuthority(t, other, "other").store.Dir, "other", KeyFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		file    string // which file to damage
		data    []byte // nil: remove it
		mention []string
	}{
		{"garbage key", KeyFile, []byte("not a key\n"), []string{KeyFile}},
		{"truncated key", KeyFile, []byte("-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49\n-----END PRIVATE KEY-----\n"), []string{KeyFile}},
		{"key of another CA", KeyFile, otherKey, []string{KeyFile, CertFile, "does not match"}},
		{"garbage cert", CertFile, []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"), []string{CertFile}},
		{"two certs", CertFile, nil, []string{CertFile}}, // filled below
		{"missing key", KeyFile, nil, []string{KeyFile, "missing"}},
		{"missing cert", CertFile, nil, []string{CertFile, "missing"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t)
			a := MustAuthority(t, s, "acme")
			path := filepath.Join(s.Dir, "acme", tc.file)
			data := tc.data
			if tc.name == "two certs" {
				data = append(a.CertPEM(), a.CertPEM()...)
			}
			if data == nil {
				if err := os.Remove(path); err != nil {
					t.Fatal(err)
				}
			} else if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}

			s2 := newStore(t)
			s2.Dir = s.Dir
			_, err := s2.Authority("acme")
			if err == nil {
				t.Fatal("damaged CA loaded without error")
			}
			for _, m := range tc.mention {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not mention %q", err, m)
				}
			}
			// Never silently replaced.
			after, _ := os.ReadFile(path)
			if data != nil && !bytes.Equal(after, data) {
				t.Error("damaged file was rewritten")
			}
			if data == nil {
				if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
					t.Error("missing file was recreated")
				}
			}
			// Rotate is the way out.
			r, err := s2.Rotate("acme")
			if err != nil {
				t.Fatalf("Rotate after damage: %v", err)
			}
			s3 := newStore(t)
			s3.Dir = s.Dir
			if MustAuthority(t, s3, "acme").Fingerprint() != r.Fingerprint() {
				t.Error("rotated CA not loaded")
			}
		})
	}
}

func TestRotate(t *testing.T) {
	s := newStore(t)
	clk := newClock()
	s.Now = clk.Now
	old := MustAuthority(t, s, "acme")
	beta := MustAuthority(t, s, "beta")
	oldLeaf := MustLeaf(t, old, "a.example.test")
	betaLeaf := MustLeaf(t, beta, "a.example.test")

	cur, err := s.Rotate("acme")
	if err != nil {
		t.Fatal(err)
	}
	if cur.Fingerprint() == old.Fingerprint() {
		t.Fatal("Rotate kept the root")
	}
	if MustAuthority(t, s, "acme") != cur {
		t.Error("Authority does not return the rotated CA")
	}
	if _, err := old.Leaf("a.example.test"); !errors.Is(err, ErrRetired) {
		t.Errorf("old authority Leaf err = %v, want ErrRetired", err)
	}
	newLeaf := MustLeaf(t, cur, "a.example.test")
	if newLeaf == oldLeaf {
		t.Fatal("cached leaf survived rotation")
	}
	now := clk.Now()
	if err := verify(newLeaf, MustPool(t, cur), "a.example.test", now); err != nil {
		t.Errorf("new leaf vs new root: %v", err)
	}
	if err := verify(newLeaf, MustPool(t, old), "a.example.test", now); err == nil {
		t.Error("new leaf verifies against the old root")
	}
	if MustLeaf(t, beta, "a.example.test") != betaLeaf {
		t.Error("rotating acme dropped beta's leaves")
	}

	dir := filepath.Join(s.Dir, "acme")
	ts := now.Unix()
	oldCert, err := os.ReadFile(filepath.Join(dir, CertFile+"."+itoa(ts)+".old"))
	if err != nil {
		t.Fatalf("old certificate not kept: %v", err)
	}
	if !bytes.Equal(oldCert, old.CertPEM()) {
		t.Error("kept certificate is not the old root")
	}
	fi, err := os.Stat(filepath.Join(dir, KeyFile+"."+itoa(ts)+".old"))
	if err != nil {
		t.Fatalf("old key not kept: %v", err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("old key mode %o, want 600", fi.Mode().Perm())
	}
	if fi, _ := os.Stat(filepath.Join(dir, KeyFile)); fi.Mode().Perm() != 0o600 {
		t.Errorf("new key mode %o, want 600", fi.Mode().Perm())
	}

	// A second rotation within the same second keeps both old pairs.
	third, err := s.Rotate("acme")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, CertFile+"."+itoa(ts+1)+".old")); err != nil {
		t.Errorf("second rotation overwrote the first backup: %v", err)
	}

	s2 := newStore(t)
	s2.Dir = s.Dir
	if MustAuthority(t, s2, "acme").Fingerprint() != third.Fingerprint() {
		t.Error("disk does not hold the latest root")
	}
	if MustAuthority(t, s2, "beta").Fingerprint() != beta.Fingerprint() {
		t.Error("rotating acme changed beta")
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
