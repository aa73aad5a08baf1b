package ca

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"
)

// Issuer issues a tenant's intermediate CA: it signs the CSR of a key made
// here with the tenant's root, which it holds elsewhere (step-ca, for
// replicas). The leaf path stays local: the gateway mints leaves from the
// intermediate as from a local root.
type Issuer interface {
	Issue(ctx context.Context, tenant string, csrDER []byte) (*Issued, error)
}

// Issued is what an Issuer returns.
type Issued struct {
	// Certificate is the intermediate, for the CSR's key.
	Certificate *x509.Certificate
	// Chain holds the certificates between Certificate and Root (an online
	// intermediate of step-ca's, under an offline root), nearest first.
	Chain []*x509.Certificate
	// Root is the tenant's root: what sandboxes trust. It must not change
	// when replicas come and go.
	Root *x509.Certificate
}

// issueTimeout bounds one issuance.
const issueTimeout = 30 * time.Second

// issue makes a key, has iss sign it and checks what comes back: an
// intermediate for that key, a CA that signs only leaves, valid now, that
// chains to the root. The key never leaves memory.
func (s *Store) issue(tenant string, iss Issuer) (*Authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("ca: tenant %q: intermediate key: %w", tenant, err)
	}
	// The name is a DNS label because step-ca checks a CSR's names against its
	// token's subject; the provisioner's template decides what the
	// certificate says.
	name := "sluice-" + tenant + "-ca"
	csr, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject:  pkix.Name{CommonName: name, Organization: []string{"Sluice"}, OrganizationalUnit: []string{tenant}},
		DNSNames: []string{name},
	}, key)
	if err != nil {
		return nil, fmt.Errorf("ca: tenant %q: intermediate CSR: %w", tenant, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), issueTimeout)
	defer cancel()
	got, err := iss.Issue(ctx, tenant, csr)
	if err != nil {
		return nil, fmt.Errorf("ca: tenant %q: issue intermediate: %w", tenant, err)
	}
	if err := checkIssued(got, key.Public(), s.now()); err != nil {
		return nil, fmt.Errorf("ca: tenant %q: issued intermediate refused: %w", tenant, err)
	}
	chain := [][]byte{got.Certificate.Raw}
	for _, c := range got.Chain {
		chain = append(chain, c.Raw)
	}
	a := &Authority{tenant: tenant, cert: got.Certificate, key: key, id: got.Certificate.SerialNumber.Text(16), store: s,
		anchor: got.Root, chain: chain, certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: got.Root.Raw}),
		life: got.Certificate.NotAfter.Sub(s.now())}
	s.logger().Info("ca: tenant intermediate issued", logTenant, tenant, "not_after", got.Certificate.NotAfter.UTC(),
		logFingerprint, fingerprint(got.Root))
	return a, nil
}

func checkIssued(got *Issued, pub crypto.PublicKey, now time.Time) error {
	if got == nil || got.Certificate == nil || got.Root == nil {
		return errors.New("no certificate or no root")
	}
	c := got.Certificate
	if k, ok := c.PublicKey.(*ecdsa.PublicKey); !ok || !k.Equal(pub) {
		return errors.New("not for the key it was asked for")
	}
	// A CA that may sign leaves and nothing more: were it able to sign
	// another CA, a stolen replica key would outlive its intermediate.
	if !c.BasicConstraintsValid || !c.IsCA || c.MaxPathLen != 0 || c.KeyUsage&x509.KeyUsageCertSign == 0 {
		return errors.New("not a CA limited to signing leaves (basic constraints CA, path length 0, certSign)")
	}
	if now.Before(c.NotBefore) || !now.Before(c.NotAfter) {
		return fmt.Errorf("not valid now (%s to %s)", c.NotBefore.UTC().Format(time.RFC3339), c.NotAfter.UTC().Format(time.RFC3339))
	}
	roots, mid := x509.NewCertPool(), x509.NewCertPool()
	roots.AddCert(got.Root)
	for _, m := range got.Chain {
		mid.AddCert(m)
	}
	if _, err := c.Verify(x509.VerifyOptions{Roots: roots, Intermediates: mid, CurrentTime: now,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
		return fmt.Errorf("does not chain to the tenant root: %w", err)
	}
	return nil
}

// checked returns a loaded authority, or ErrExpired for an issued one whose
// intermediate expired unrenewed: the tenant fails closed (no leaves, not
// ready) rather than minting from a stale key.
func (a *Authority) checked(now time.Time) (*Authority, error) {
	if a.anchor != nil {
		if err := a.usable(now); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// usable reports whether the authority may sign at now.
func (a *Authority) usable(now time.Time) error {
	if now.Before(a.cert.NotAfter) {
		return nil
	}
	at := a.cert.NotAfter.UTC().Format(time.RFC3339)
	if a.anchor != nil {
		return fmt.Errorf("%w: tenant %q intermediate expired at %s and was not renewed", ErrExpired, a.tenant, at)
	}
	return fmt.Errorf("%w: tenant %q root expired at %s; rotate it", ErrExpired, a.tenant, at)
}

// chainDER is what follows a leaf in a handshake: the root for a local CA,
// the intermediate and any chain above it (never the root) for an issued one.
func (a *Authority) chainDER() [][]byte {
	if a.chain != nil {
		return a.chain
	}
	return [][]byte{a.cert.Raw}
}

// Certificate returns the root certificate (the trust anchor, also for an
// issued CA). Callers must not modify it.
func (a *Authority) Certificate() *x509.Certificate {
	if a.anchor != nil {
		return a.anchor
	}
	return a.cert
}

// Issued reports whether the authority is an intermediate from an Issuer,
// and until when it is valid.
func (a *Authority) Issued() (bool, time.Time) { return a.anchor != nil, a.cert.NotAfter }

// permits reports whether the CA's name constraints allow a leaf for host.
// Clients would refuse such a leaf anyway: refusing here says why.
func permits(c *x509.Certificate, host string, ip netip.Addr) bool {
	if ip.IsValid() {
		if len(c.PermittedIPRanges) == 0 && len(c.PermittedDNSDomains) > 0 {
			return false
		}
		for _, r := range c.ExcludedIPRanges {
			if r.Contains(ip.AsSlice()) {
				return false
			}
		}
		if len(c.PermittedIPRanges) == 0 {
			return true
		}
		for _, r := range c.PermittedIPRanges {
			if r.Contains(ip.AsSlice()) {
				return true
			}
		}
		return false
	}
	for _, d := range c.ExcludedDNSDomains {
		if inDomain(host, d) {
			return false
		}
	}
	if len(c.PermittedDNSDomains) == 0 {
		return true
	}
	for _, d := range c.PermittedDNSDomains {
		if inDomain(host, d) {
			return true
		}
	}
	return false
}

// inDomain is RFC 5280's DNS name constraint match: d itself or below it
// (a leading dot: below it only).
func inDomain(host, d string) bool {
	d = strings.ToLower(d)
	if strings.HasPrefix(d, ".") {
		return strings.HasSuffix(host, d)
	}
	return host == d || strings.HasSuffix(host, "."+d)
}

// renewAt is when an intermediate is renewed: with a third of the life it
// had on arrival left.
func (a *Authority) renewAt() time.Time { return a.cert.NotAfter.Add(-a.life / 3) }

// RenewIssued renews the issued intermediates that have a third of their
// life or less left, and returns the first error. A failed renewal keeps
// the current intermediate until it expires; then the tenant fails closed.
// Call it every minute or so (RunRenewal).
func (s *Store) RenewIssued() error {
	var errs []error
	for tenant, iss := range s.Issuers {
		a := s.loaded(tenant)
		if a == nil || s.now().Before(a.renewAt()) {
			continue
		}
		m := s.tenantLock(tenant)
		m.Lock()
		n, err := s.issue(tenant, iss)
		if err == nil {
			s.mu.Lock()
			s.auths[tenant] = n
			s.mu.Unlock()
		}
		m.Unlock()
		if err != nil {
			s.logger().Error("ca: intermediate not renewed", logTenant, tenant, "expires", a.cert.NotAfter.UTC(), logErr, err)
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// RunRenewal calls RenewIssued every interval (zero: a minute; more often
// for intermediates that live less than ten of them) until ctx ends.
func (s *Store) RunRenewal(ctx context.Context, every time.Duration) {
	if len(s.Issuers) == 0 {
		return
	}
	if every <= 0 {
		every = time.Minute
	}
	for {
		wait := every
		for tenant := range s.Issuers {
			if a := s.loaded(tenant); a != nil {
				wait = min(wait, max(a.life/10, 100*time.Millisecond))
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
			s.RenewIssued()
		}
	}
}
