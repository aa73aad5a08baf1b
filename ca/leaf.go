package ca

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"net"
	"net/netip"
	"time"
)

const (
	// maxHostLen is the longest DNS name (RFC 1035) in presentation form.
	maxHostLen = 253
	// maxLabelLen is the longest DNS label (RFC 1035).
	maxLabelLen = 63
	// maxCommonNameLen is ub-common-name (RFC 5280); longer names go in the SAN only.
	maxCommonNameLen = 64
)

// leafKey identifies a cached leaf: tenants never share an entry.
type leafKey struct {
	tenant, host string
}

type leafEntry struct {
	cert *tls.Certificate
	auth *Authority // the root generation that signed it
}

// fresh reports whether the leaf still has at least a third of its lifetime left,
// so a client never receives a certificate about to expire mid-connection.
func (e *leafEntry) fresh(now time.Time) bool {
	l := e.cert.Leaf
	if now.Before(l.NotBefore) {
		return false // the clock went backwards
	}
	lifetime := l.NotAfter.Sub(l.NotBefore)
	return l.NotAfter.Sub(now) >= lifetime/3
}

// Leaf returns a certificate for host signed by this tenant's root, with the chain
// [leaf, root] and Leaf set. host must already be normalised by the caller
// (lower-case, punycode, no trailing dot; IP literals canonical, unbracketed,
// without zone): a DNS name yields exactly that DNS SAN, an IP literal an IP SAN.
// Wildcards are refused. Leaves are cached per (tenant, host) and re-minted when
// less than a third of their lifetime remains; concurrent misses mint once.
func (a *Authority) Leaf(host string) (*tls.Certificate, error) {
	s := a.store
	if a.retired.Load() {
		return nil, fmt.Errorf("%w: tenant %q", ErrRetired, a.tenant)
	}
	key := leafKey{a.tenant, host}
	if e, ok := s.cache.Get(key); ok && e.auth == a && e.fresh(s.now()) {
		s.reportLeaf(a.tenant, true, 0)
		return e.cert, nil
	}
	ip, err := checkHost(host)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	v, err, _ := s.flight.Do(a.id+"\x00"+host, func() (any, error) {
		// Another call may have filled the cache between our miss and this flight.
		if e, ok := s.cache.Peek(key); ok && e.auth == a && e.fresh(s.now()) {
			return e.cert, nil
		}
		c, err := a.mint(host, ip)
		if err != nil {
			return nil, err
		}
		s.cache.Add(key, &leafEntry{cert: c, auth: a})
		return c, nil
	})
	s.reportLeaf(a.tenant, false, time.Since(start))
	if err != nil {
		return nil, err
	}
	return v.(*tls.Certificate), nil
}

func (s *Store) reportLeaf(tenant string, hit bool, d time.Duration) {
	if s.OnLeaf != nil {
		s.OnLeaf(tenant, hit, d)
	}
}

// checkHost accepts a canonical IP literal (returned) or a lower-case DNS name
// of [a-z0-9-_] labels. Anything else is refused rather than guessed at, so the
// cache key and the certificate's name are always the same string.
func checkHost(host string) (netip.Addr, error) {
	if host == "" || len(host) > maxHostLen {
		return netip.Addr{}, fmt.Errorf("%w %q: length must be 1 to %d", ErrInvalidHost, host, maxHostLen)
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if ip.Zone() != "" || ip.String() != host {
			return netip.Addr{}, fmt.Errorf("%w %q: IP literal not canonical (want %q, no zone)", ErrInvalidHost, host, ip.WithZone("").String())
		}
		return ip, nil
	}
	label := 0
	for i := 0; i < len(host); i++ {
		c := host[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '_':
			label++
			if label > maxLabelLen {
				return netip.Addr{}, fmt.Errorf("%w %q: label longer than %d", ErrInvalidHost, host, maxLabelLen)
			}
		case c == '.':
			if label == 0 || i == len(host)-1 {
				return netip.Addr{}, fmt.Errorf("%w %q: empty label", ErrInvalidHost, host)
			}
			label = 0
		default:
			return netip.Addr{}, fmt.Errorf("%w %q: not a normalised host name", ErrInvalidHost, host)
		}
	}
	return netip.Addr{}, nil
}

// mint signs a fresh leaf for host. ip is valid when host is an IP literal.
func (a *Authority) mint(host string, ip netip.Addr) (*tls.Certificate, error) {
	s := a.store
	now := s.now()
	if err := a.usable(now); err != nil {
		return nil, err
	}
	if !permits(a.cert, host, ip) {
		return nil, fmt.Errorf("%w %q: outside the name constraints of tenant %q's intermediate", ErrInvalidHost, host, a.tenant)
	}
	// A fresh key per leaf: one leaked leaf key must not impersonate other hosts.
	// P-256 keeps minting (~0.2 ms) and handshakes cheap.
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("ca: leaf key: %w", err)
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, fmt.Errorf("ca: leaf: %w", err)
	}
	notAfter := now.Add(s.leafTTL())
	if notAfter.After(a.cert.NotAfter) {
		notAfter = a.cert.NotAfter // a leaf cannot outlive its root
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject: pkix.Name{
			// Shown in client error messages and inspectors: says who intercepted.
			Organization:       []string{"Sluice"},
			OrganizationalUnit: []string{a.tenant},
		},
		// Backdated for clock skew between the gateway and the sandbox.
		NotBefore: now.Add(-backdate),
		NotAfter:  notAfter,
		// ECDSA keys only sign in TLS; KeyEncipherment is for RSA key transport.
		KeyUsage: x509.KeyUsageDigitalSignature,
		// Valid for TLS servers only: never for client auth or code signing.
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		// Present and false: this certificate must never act as a CA.
		BasicConstraintsValid: true,
		IsCA:                  false,
		// Ties the leaf to its root generation; helps clients build the chain after a rotation.
		AuthorityKeyId: a.cert.SubjectKeyId,
	}
	if len(host) <= maxCommonNameLen {
		// Clients check the SAN only; a CN is kept for humans and old tools.
		tmpl.Subject.CommonName = host
	}
	if ip.IsValid() {
		tmpl.IPAddresses = []net.IP{ip.AsSlice()}
	} else {
		tmpl.DNSNames = []string{host}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &key.PublicKey, a.key)
	if err != nil {
		return nil, fmt.Errorf("ca: tenant %q: sign leaf for %q: %w", a.tenant, host, err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("ca: tenant %q: parse leaf for %q: %w", a.tenant, host, err)
	}
	s.minted.Add(1)
	return &tls.Certificate{
		Certificate: append([][]byte{der}, a.chainDER()...),
		PrivateKey:  key,
		Leaf:        leaf,
	}, nil
}

// purgeTenant drops every cached leaf of tenant.
func (s *Store) purgeTenant(tenant string) {
	for _, k := range s.cache.Keys() {
		if k.tenant == tenant {
			s.cache.Remove(k)
		}
	}
}
