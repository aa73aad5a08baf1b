package ca

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"sync"
	"testing"
	"time"
)

// fakeIssuer is an offline root with an online intermediate that signs CSRs
// as step-ca's provisioner template does; edit lets a test spoil what it issues.
type fakeIssuer struct {
	mu        sync.Mutex
	root      *x509.Certificate
	online    *x509.Certificate
	onlineKey *ecdsa.PrivateKey
	ttl       time.Duration
	permitted []string
	now       func() time.Time
	edit      func(*x509.Certificate)
	fail      error
	issued    int
}

func newFakeIssuer(t *testing.T, now func() time.Time) *fakeIssuer {
	t.Helper()
	rootKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	start := now().Add(-time.Hour)
	root := mustCert(t, &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "tenant root"},
		NotBefore: start, NotAfter: start.AddDate(10, 0, 0), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign, MaxPathLen: 2}, nil, &rootKey.PublicKey, rootKey)
	onlineKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	online := mustCert(t, &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "online intermediate"},
		NotBefore: start, NotAfter: start.AddDate(1, 0, 0), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign, MaxPathLen: 1}, root, &onlineKey.PublicKey, rootKey)
	return &fakeIssuer{root: root, online: online, onlineKey: onlineKey, ttl: 8 * time.Hour, now: now,
		permitted: []string{"example.test"}}
}

func mustCert(t *testing.T, tmpl, parent *x509.Certificate, pub any, key *ecdsa.PrivateKey) *x509.Certificate {
	t.Helper()
	if parent == nil {
		parent = tmpl
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (f *fakeIssuer) Issue(_ context.Context, tenant string, csrDER []byte) (*Issued, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return nil, f.fail
	}
	csr, err := x509.ParseCertificateRequest(csrDER)
	if err != nil || csr.CheckSignature() != nil {
		return nil, errors.New("bad CSR")
	}
	f.issued++
	now := f.now()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(int64(100 + f.issued)), Subject: csr.Subject,
		NotBefore: now.Add(-time.Minute), NotAfter: now.Add(f.ttl), IsCA: true, BasicConstraintsValid: true,
		MaxPathLen: 0, MaxPathLenZero: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		PermittedDNSDomainsCritical: true, PermittedDNSDomains: f.permitted}
	if f.edit != nil {
		f.edit(tmpl)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, f.online, csr.PublicKey, f.onlineKey)
	if err != nil {
		return nil, err
	}
	c, _ := x509.ParseCertificate(der)
	return &Issued{Certificate: c, Chain: []*x509.Certificate{f.online}, Root: f.root}, nil
}

// verifyChain checks a leaf as a sandbox does: the tenant root alone is
// trusted, the rest comes from the handshake.
func verifyChain(leaf *tls.Certificate, root *x509.Certificate, name string, now time.Time) error {
	roots, mid := x509.NewCertPool(), x509.NewCertPool()
	roots.AddCert(root)
	for _, der := range leaf.Certificate[1:] {
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return err
		}
		mid.AddCert(c)
	}
	_, err := leaf.Leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: mid, DNSName: name, CurrentTime: now,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	return err
}

func TestIssuedIntermediate(t *testing.T) {
	clk := newClock()
	iss := newFakeIssuer(t, clk.Now)
	s := newStore(t)
	s.Now = clk.Now
	s.Issuers = map[string]Issuer{"acme": iss}
	a := MustAuthority(t, s, "acme")
	if a.Certificate() != iss.root || string(a.CertPEM()) == "" || a.Fingerprint() != fingerprint(iss.root) {
		t.Fatal("an issued CA's trust anchor must be the tenant root")
	}
	if ok, until := a.Issued(); !ok || !until.Equal(a.cert.NotAfter) {
		t.Fatalf("Issued() = %v %v", ok, until)
	}
	leaf := MustLeaf(t, a, "api.example.test")
	if err := verifyChain(leaf, iss.root, "api.example.test", clk.Now()); err != nil {
		t.Fatalf("a sandbox trusting only the tenant root refuses the leaf: %v", err)
	}
	if len(leaf.Certificate) != 3 {
		t.Errorf("chain of %d certificates, want leaf, intermediate, online intermediate (no root)", len(leaf.Certificate))
	}
	if !leaf.Leaf.NotAfter.After(clk.Now()) || leaf.Leaf.NotAfter.After(a.cert.NotAfter) {
		t.Errorf("leaf valid until %v, intermediate until %v", leaf.Leaf.NotAfter, a.cert.NotAfter)
	}
	if _, err := a.Leaf("evil.invalid"); !errors.Is(err, ErrInvalidHost) {
		t.Errorf("leaf outside the name constraints: %v", err)
	}
	// Other tenants keep their local roots.
	if b := MustAuthority(t, s, "globex"); b.anchor != nil || b.Certificate() != b.cert {
		t.Error("a tenant without an issuer got an issued CA")
	}

	t.Run("renewed with a third of its life left", func(t *testing.T) {
		s.RenewIssued()
		if iss.issued != 1 {
			t.Fatalf("renewed early: %d issuances", iss.issued)
		}
		clk.Set(clk.Now().Add(6 * time.Hour))
		if err := s.RenewIssued(); err != nil {
			t.Fatal(err)
		}
		b := MustAuthority(t, s, "acme")
		if iss.issued != 2 || b == a || b.cert.NotAfter.Before(clk.Now().Add(7*time.Hour)) {
			t.Fatalf("not renewed: %d issuances", iss.issued)
		}
		if l := MustLeaf(t, b, "api.example.test"); l == leaf || verifyChain(l, iss.root, "api.example.test", clk.Now()) != nil {
			t.Fatal("the renewed intermediate's leaf")
		}
		a = b
	})

	t.Run("not renewed: fails closed at expiry", func(t *testing.T) {
		iss.mu.Lock()
		iss.fail = errors.New("step-ca unreachable")
		iss.mu.Unlock()
		clk.Set(a.cert.NotAfter.Add(-time.Minute))
		if err := s.RenewIssued(); err == nil {
			t.Fatal("a failed renewal reported no error")
		}
		if _, err := s.Authority("acme"); err != nil {
			t.Fatalf("before expiry the current intermediate still serves: %v", err)
		}
		clk.Set(a.cert.NotAfter)
		if _, err := s.Authority("acme"); !errors.Is(err, ErrExpired) {
			t.Fatalf("Authority after expiry: %v, want ErrExpired", err)
		}
		if _, err := a.Leaf("fresh.example.test"); !errors.Is(err, ErrExpired) {
			t.Fatalf("Leaf from the stale key: %v, want ErrExpired", err)
		}
		if _, err := a.Leaf("api.example.test"); err == nil {
			t.Fatal("a cached leaf served after its intermediate expired")
		}
		iss.mu.Lock()
		iss.fail = nil
		iss.mu.Unlock()
		if err := s.RenewIssued(); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Authority("acme"); err != nil {
			t.Fatalf("after a late renewal: %v", err)
		}
	})
}

func TestIssuedIntermediateRefused(t *testing.T) {
	clk := newClock()
	for name, edit := range map[string]func(*x509.Certificate){
		"not a CA":        func(c *x509.Certificate) { c.IsCA = false; c.MaxPathLenZero = false },
		"may sign CAs":    func(c *x509.Certificate) { c.MaxPathLen = 1; c.MaxPathLenZero = false },
		"no path length":  func(c *x509.Certificate) { c.MaxPathLen = -1; c.MaxPathLenZero = false },
		"cannot sign":     func(c *x509.Certificate) { c.KeyUsage = x509.KeyUsageDigitalSignature },
		"already expired": func(c *x509.Certificate) { c.NotAfter = clk.Now().Add(-time.Second) },
		"not yet valid":   func(c *x509.Certificate) { c.NotBefore = clk.Now().Add(time.Hour) },
	} {
		t.Run(name, func(t *testing.T) {
			iss := newFakeIssuer(t, clk.Now)
			iss.edit = edit
			s := newStore(t)
			s.Now = clk.Now
			s.Issuers = map[string]Issuer{"acme": iss}
			if _, err := s.Authority("acme"); err == nil {
				t.Fatal("accepted")
			}
		})
	}
	t.Run("for another key", func(t *testing.T) {
		iss := newFakeIssuer(t, clk.Now)
		other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		iss.edit = func(c *x509.Certificate) { c.PublicKey = &other.PublicKey }
		got, err := iss.Issue(context.Background(), "acme", mustCSR(t, other))
		if err != nil {
			t.Fatal(err)
		}
		mine, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err := checkIssued(got, mine.Public(), clk.Now()); err == nil {
			t.Fatal("an intermediate for another key accepted")
		}
	})
}

func mustCSR(t *testing.T, k *ecdsa.PrivateKey) []byte {
	t.Helper()
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "x"}}, k)
	if err != nil {
		t.Fatal(err)
	}
	return der
}
