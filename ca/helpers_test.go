package ca

import (
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// clock is a settable time source for Store.Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Now()} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// newStore returns a Store in a fresh temporary directory with a silent logger.
func newStore(tb testing.TB) *Store {
	tb.Helper()
	return &Store{
		Dir:    filepath.Join(tb.TempDir(), "cas"),
		Logger: slog.New(slog.DiscardHandler),
	}
}

func MustAuthority(tb testing.TB, s *Store, tenant string) *Authority {
	tb.Helper()
	a, err := s.Authority(tenant)
	if err != nil {
		tb.Fatalf("Authority(%q): %v", tenant, err)
	}
	return a
}

func MustLeaf(tb testing.TB, a *Authority, host string) *tls.Certificate {
	tb.Helper()
	c, err := a.Leaf(host)
	if err != nil {
		tb.Fatalf("Leaf(%q): %v", host, err)
	}
	return c
}

// MustPool returns a pool holding only the given roots' certificates.
func MustPool(tb testing.TB, roots ...*Authority) *x509.CertPool {
	tb.Helper()
	p := x509.NewCertPool()
	for _, a := range roots {
		if !p.AppendCertsFromPEM(a.CertPEM()) {
			tb.Fatalf("CertPEM of %q does not parse", a.Tenant())
		}
	}
	return p
}

// verify checks leaf for name against roots only, at time now.
func verify(leaf *tls.Certificate, roots *x509.CertPool, name string, now time.Time) error {
	_, err := leaf.Leaf.Verify(x509.VerifyOptions{
		Roots:       roots,
		DNSName:     name,
		CurrentTime: now,
		KeyUsages:   []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	return err
}
