package stepca_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluice-egress/sluice/ca"
	"github.com/sluice-egress/sluice/ca/stepca"
	"github.com/sluice-egress/sluice/internal/stepcatest"
)

// verify checks a leaf as a sandbox does: only the tenant root is trusted.
func verify(t *testing.T, leaf *tls.Certificate, root *x509.Certificate, host string) error {
	t.Helper()
	roots, mid := x509.NewCertPool(), x509.NewCertPool()
	roots.AddCert(root)
	for _, der := range leaf.Certificate[1:] {
		c, err := x509.ParseCertificate(der)
		if err != nil {
			t.Fatal(err)
		}
		if c.Equal(root) {
			t.Error("the handshake chain carries the root")
		}
		mid.AddCert(c)
	}
	_, err := leaf.Leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: mid, DNSName: host,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	return err
}

// TestRealStepCAIssuesIntermediates: a real step-ca (the pinned version)
// issues a replica's intermediate through the JWK provisioner; leaves from
// it verify against the tenant root alone; two replicas get different
// intermediates under the same root; and when step-ca is gone and the
// intermediate expires, the tenant fails closed.
func TestRealStepCAIssuesIntermediates(t *testing.T) {
	sca := stepcatest.Start(t, stepcatest.Options{Permitted: []string{"example.test"}})
	newReplica := func(ttl time.Duration) *ca.Store {
		return &ca.Store{Dir: filepath.Join(t.TempDir(), "cas"), Logger: slog.New(slog.DiscardHandler),
			Issuers: map[string]ca.Issuer{"acme": &stepca.Client{URL: sca.URL, Root: sca.Root,
				Provisioner: sca.Provisioner, Key: sca.Key, TTL: ttl}}}
	}
	a, b := newReplica(time.Hour), newReplica(time.Hour)
	aa, err := a.Authority("acme")
	if err != nil {
		t.Fatalf("issue: %v\nstep-ca log:\n%s", err, sca.Log())
	}
	ba, err := b.Authority("acme")
	if err != nil {
		t.Fatal(err)
	}
	if !aa.Certificate().Equal(sca.Root) || string(aa.CertPEM()) != string(ba.CertPEM()) {
		t.Fatal("the trust anchor must be the tenant root, the same on every replica")
	}
	for name, s := range map[string]*ca.Store{"a": a, "b": b} {
		auth, _ := s.Authority("acme")
		leaf, err := auth.Leaf("api.example.test")
		if err != nil {
			t.Fatalf("replica %s: leaf: %v", name, err)
		}
		if err := verify(t, leaf, sca.Root, "api.example.test"); err != nil {
			t.Fatalf("replica %s: a sandbox trusting the tenant root refuses the leaf: %v", name, err)
		}
		inter, _ := x509.ParseCertificate(leaf.Certificate[1])
		if !inter.IsCA || !inter.MaxPathLenZero || len(inter.PermittedDNSDomains) != 1 || !inter.PermittedDNSDomainsCritical {
			t.Errorf("replica %s: intermediate %+v: want a CA for leaves only, name-constrained", name, inter.Subject)
		}
		if d := inter.NotAfter.Sub(inter.NotBefore); d > time.Hour+2*time.Minute {
			t.Errorf("replica %s: intermediate lives %v, asked for an hour", name, d)
		}
	}
	la, _ := aa.Leaf("api.example.test")
	lb, _ := ba.Leaf("api.example.test")
	if string(la.Certificate[1]) == string(lb.Certificate[1]) {
		t.Error("two replicas share an intermediate")
	}
	if _, err := aa.Leaf("api.other.invalid"); !errors.Is(err, ca.ErrInvalidHost) {
		t.Errorf("a host outside the constraints: %v", err)
	}

	t.Run("a wrong provisioner key is refused", func(t *testing.T) {
		other := newReplica(time.Hour)
		c := other.Issuers["acme"].(*stepca.Client)
		k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		c.Key, c.KeyID = k, stepca.Thumbprint(&sca.Key.PublicKey) // another key under the provisioner's id
		if _, err := other.Authority("acme"); err == nil {
			t.Fatal("step-ca issued for a token signed by another key")
		}
	})

	t.Run("expiry without renewal fails closed", func(t *testing.T) {
		short := newReplica(3 * time.Second)
		sa, err := short.Authority("acme")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sa.Leaf("api.example.test"); err != nil {
			t.Fatal(err)
		}
		sca.Stop() // step-ca is gone: renewals fail
		_, until := sa.Issued()
		time.Sleep(time.Until(until.Add(-400 * time.Millisecond))) // past renewal time (a third of 3s left)
		if err := short.RenewIssued(); err == nil {
			t.Fatal("renewal with step-ca gone reported no error")
		}
		time.Sleep(time.Until(until) + 10*time.Millisecond)
		if _, err := short.Authority("acme"); !errors.Is(err, ca.ErrExpired) {
			t.Fatalf("after expiry: %v, want ErrExpired", err)
		}
		if _, err := sa.Leaf("new.example.test"); !errors.Is(err, ca.ErrExpired) {
			t.Fatalf("leaf from the stale key: %v", err)
		}
	})
}
