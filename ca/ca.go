// Package ca keeps one certificate authority per tenant on disk and mints the short-lived leaf certificates the gateway presents inside MITM tunnels.
package ca

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math/big"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/sluice-egress/sluice/internal/fileutil"
	"go.step.sm/crypto/pemutil"
	"golang.org/x/sync/singleflight"
)

// File names inside Dir/<tenant>/.
const (
	CertFile = "ca.pem"
	KeyFile  = "ca.key"
)

// Defaults applied when the matching Store field is zero.
const (
	DefaultLeafTTL   = 24 * time.Hour
	DefaultCacheSize = 10000
)

const (
	// rootValidityYears is long because replacing a root means re-provisioning every
	// sandbox image that trusts it; Rotate exists for when that must happen sooner.
	rootValidityYears = 10
	// backdate absorbs clock skew between the gateway and sandboxes: a
	// container whose clock runs a little behind must not see "not yet valid".
	backdate = 5 * time.Minute
	// maxTenantLen keeps tenant names usable as a DNS label and a path element.
	maxTenantLen = 63
)

// Log attribute keys.
const (
	logTenant      = "tenant"
	logPath        = "path"
	logFingerprint = "fingerprint"
	logErr         = "err"
)

// Errors callers may test with errors.Is.
var (
	// ErrInvalidTenant: the tenant name is not [a-z0-9-]{1,63} starting and ending alphanumeric.
	ErrInvalidTenant = errors.New("ca: invalid tenant name")
	// ErrInvalidHost: the host given to Leaf is not a normalised DNS name or canonical IP literal.
	ErrInvalidHost = errors.New("ca: invalid host")
	// ErrRetired: the Authority was replaced by Rotate and no longer signs; fetch the current one with Store.Authority.
	ErrRetired = errors.New("ca: authority was rotated")
	// ErrExpired: the tenant's root has expired (Rotate it), or its issued
	// intermediate has and was not renewed.
	ErrExpired = errors.New("ca: expired")
)

// Store holds the CAs of all tenants under Dir and mints leaf certificates for them.
// Its zero value (with Dir set) is ready to use; it must not be copied after first use.
type Store struct {
	// Dir is required: CAs live in Dir/<tenant>/ca.pem and Dir/<tenant>/ca.key.
	Dir string
	// Passphrase encrypts the CA keys at rest. Nil: the key file is plain PKCS#8 PEM
	// with mode 0600; otherwise it is encrypted PKCS#8 PEM (PBES2, AES-256-CBC).
	// Loading an encrypted key without it, or a plain key with it, is an error.
	Passphrase []byte
	// LeafTTL is the lifetime of leaf certificates. Zero: 24h. Leaves are valid from
	// now-5m to now+LeafTTL, never beyond the CA's NotAfter.
	LeafTTL time.Duration
	// CacheSize bounds the LRU of minted leaves keyed by (tenant, host). Zero or negative: 10000.
	CacheSize int
	// Now is the clock. Nil: time.Now.
	Now func() time.Time
	// Logger receives CA lifecycle events and warnings, never key material. Nil: slog.Default().
	Logger *slog.Logger
	// Issuers, for the tenants they name, replace the local root: the tenant's
	// CA is an intermediate they issue for a key made here (step-ca for
	// replicas: the root stays there), renewed by RenewIssued. Nil or absent:
	// the tenant's root lives in Dir.
	Issuers map[string]Issuer
	// OnLeaf, if set, is called after each Leaf lookup: hit reports a warm cache,
	// d the time spent minting (or waiting for a concurrent mint) on a miss. For metrics.
	OnLeaf func(tenant string, hit bool, d time.Duration)

	once    sync.Once
	initErr error
	cache   *lru.Cache[leafKey, *leafEntry]
	flight  singleflight.Group

	mu     sync.RWMutex
	auths  map[string]*Authority
	locks  map[string]*sync.Mutex // per-tenant: serialises create, load and rotate
	minted atomic.Int64           // leaves actually minted, for tests
}

// Authority is one tenant's CA. It is safe for concurrent use.
type Authority struct {
	tenant  string
	cert    *x509.Certificate
	certPEM []byte
	key     crypto.Signer
	id      string // hex serial of the root: distinguishes generations in cache and singleflight keys
	store   *Store
	retired atomic.Bool
	// For a CA issued by an Issuer (issued.go): anchor is the tenant root that
	// sandboxes trust (certPEM is its PEM; cert is the intermediate that signs),
	// chain what follows a leaf in a handshake. Nil for a local root.
	anchor *x509.Certificate
	chain  [][]byte
	// life is how long an issued intermediate had left when it arrived
	// (step-ca backdates NotBefore: its validity overstates it).
	life time.Duration
}

// Tenant returns the tenant this CA belongs to.
func (a *Authority) Tenant() string { return a.tenant }

// CertPEM returns the root certificate in PEM form (a copy).
func (a *Authority) CertPEM() []byte { return bytes.Clone(a.certPEM) }

// Fingerprint returns the hex SHA-256 of the root certificate's DER.
func (a *Authority) Fingerprint() string { return fingerprint(a.Certificate()) }

func fingerprint(c *x509.Certificate) string {
	sum := sha256.Sum256(c.Raw)
	return hex.EncodeToString(sum[:])
}

func (s *Store) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Store) logger() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}

func (s *Store) leafTTL() time.Duration {
	if s.LeafTTL > 0 {
		return s.LeafTTL
	}
	return DefaultLeafTTL
}

func (s *Store) init() error {
	s.once.Do(func() {
		size := s.CacheSize
		if size <= 0 {
			size = DefaultCacheSize
		}
		s.cache, s.initErr = lru.New[leafKey, *leafEntry](size)
		if s.initErr != nil {
			s.initErr = fmt.Errorf("ca: leaf cache: %w", s.initErr)
		}
		s.auths = make(map[string]*Authority)
		s.locks = make(map[string]*sync.Mutex)
	})
	if s.initErr != nil {
		return s.initErr
	}
	if s.Dir == "" {
		return errors.New("ca: Store.Dir is required")
	}
	if s.Passphrase != nil && len(s.Passphrase) == 0 {
		return errors.New("ca: Store.Passphrase is set but empty; use nil for a plain key file")
	}
	return nil
}

// ValidateTenant reports whether name can name a tenant CA: 1 to 63 characters
// of [a-z0-9-], starting and ending with a letter or digit. This keeps it a single,
// inert path element (no dots, slashes or other tricks).
func ValidateTenant(name string) error {
	if name == "" || len(name) > maxTenantLen {
		return fmt.Errorf("%w %q: must be 1 to %d characters", ErrInvalidTenant, name, maxTenantLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '-' && i > 0 && i < len(name)-1:
		default:
			return fmt.Errorf("%w %q: only a-z, 0-9 and inner '-' are allowed", ErrInvalidTenant, name)
		}
	}
	return nil
}

func (s *Store) tenantLock(tenant string) *sync.Mutex {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.locks[tenant]
	if m == nil {
		m = new(sync.Mutex)
		s.locks[tenant] = m
	}
	return m
}

func (s *Store) loaded(tenant string) *Authority {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.auths[tenant]
}

// Authority returns the tenant's CA, loading it from disk or creating it on first
// use. Loaded CAs are kept in memory; concurrent first calls create exactly one CA.
// A damaged or mismatched pair on disk is an error naming the file; it is never replaced.
func (s *Store) Authority(tenant string) (*Authority, error) {
	if err := ValidateTenant(tenant); err != nil {
		return nil, err
	}
	if err := s.init(); err != nil {
		return nil, err
	}
	if a := s.loaded(tenant); a != nil {
		return a.checked(s.now())
	}
	m := s.tenantLock(tenant)
	m.Lock()
	defer m.Unlock()
	if a := s.loaded(tenant); a != nil {
		return a.checked(s.now())
	}
	var a *Authority
	var err error
	if iss := s.Issuers[tenant]; iss != nil {
		a, err = s.issue(tenant, iss)
	} else {
		a, err = s.loadOrCreate(tenant)
	}
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.auths[tenant] = a
	s.mu.Unlock()
	return a, nil
}

func (s *Store) paths(tenant string) (dir, certPath, keyPath string) {
	dir = filepath.Join(s.Dir, tenant)
	return dir, filepath.Join(dir, CertFile), filepath.Join(dir, KeyFile)
}

func exists(path string) (bool, error) {
	_, err := os.Lstat(path)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	default:
		return false, err
	}
}

func (s *Store) loadOrCreate(tenant string) (*Authority, error) {
	dir, certPath, keyPath := s.paths(tenant)
	haveCert, err := exists(certPath)
	if err != nil {
		return nil, fmt.Errorf("ca: tenant %q: %w", tenant, err)
	}
	haveKey, err := exists(keyPath)
	if err != nil {
		return nil, fmt.Errorf("ca: tenant %q: %w", tenant, err)
	}
	switch {
	case haveCert && haveKey:
		a, err := s.load(tenant, certPath, keyPath)
		if err != nil {
			return nil, err
		}
		s.logger().Info("ca: loaded tenant CA", logTenant, tenant, logPath, certPath, logFingerprint, a.Fingerprint())
		return a, nil
	case haveCert:
		return nil, fmt.Errorf("ca: tenant %q: %s exists but %s is missing; restore the key or move both files away", tenant, certPath, keyPath)
	case haveKey:
		return nil, fmt.Errorf("ca: tenant %q: %s exists but %s is missing; restore the certificate or move both files away", tenant, keyPath, certPath)
	}
	a, certPEM, keyPEM, err := s.generate(tenant)
	if err != nil {
		return nil, err
	}
	if err := mkdirPrivate(s.Dir); err != nil {
		return nil, fmt.Errorf("ca: tenant %q: %w", tenant, err)
	}
	if err := mkdirPrivate(dir); err != nil {
		return nil, fmt.Errorf("ca: tenant %q: %w", tenant, err)
	}
	// Key first: a certificate on disk must never appear without its key.
	if err := fileutil.WriteFile(keyPath, keyPEM, 0o600); err != nil {
		return nil, fmt.Errorf("ca: tenant %q: write key: %w", tenant, err)
	}
	if err := fileutil.WriteFile(certPath, certPEM, 0o644); err != nil {
		_ = os.Remove(keyPath)
		return nil, fmt.Errorf("ca: tenant %q: write certificate: %w", tenant, err)
	}
	s.logger().Info("ca: created tenant CA", logTenant, tenant, logPath, certPath, logFingerprint, a.Fingerprint())
	return a, nil
}

// mkdirPrivate creates dir with mode 0700 if it does not exist yet. An existing
// directory keeps its mode (Dir may be a mount point the operator chose).
func mkdirPrivate(dir string) error {
	ok, err := exists(dir)
	if err != nil || ok {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return os.Chmod(dir, 0o700) // MkdirAll is subject to the umask
}

// generate makes a new root and its PEM encodings, without touching the disk.
func (s *Store) generate(tenant string) (a *Authority, certPEM, keyPEM []byte, err error) {
	// P-256: universally supported by TLS clients and ~100x cheaper than RSA to generate.
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("ca: tenant %q: generate key: %w", tenant, err)
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("ca: tenant %q: %w", tenant, err)
	}
	skid, err := subjectKeyID(&key.PublicKey)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("ca: tenant %q: %w", tenant, err)
	}
	now := s.now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject: pkix.Name{
			// The name users see in trust stores and browser dialogs: says whose MITM root it is.
			CommonName:         "Sluice " + tenant + " CA",
			Organization:       []string{"Sluice"},
			OrganizationalUnit: []string{tenant},
		},
		NotBefore: now.Add(-backdate),
		NotAfter:  now.AddDate(rootValidityYears, 0, 0),
		// A root only signs certificates (and CRLs should we ever publish them); it never does TLS itself.
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		// BasicConstraints must be present and critical for clients to accept a CA.
		BasicConstraintsValid: true,
		IsCA:                  true,
		// MaxPathLen 0: this root may sign leaves only, never an intermediate that could
		// sign for anything outside our control.
		MaxPathLen:     0,
		MaxPathLenZero: true,
		// Lets clients match leaves (AuthorityKeyId) to this root, and tell rotated roots apart.
		SubjectKeyId: skid,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("ca: tenant %q: create root: %w", tenant, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("ca: tenant %q: parse new root: %w", tenant, err)
	}
	opts := []pemutil.Options{pemutil.WithPKCS8(true)}
	if s.Passphrase != nil {
		opts = append(opts, pemutil.WithPassword(s.Passphrase))
	}
	block, err := pemutil.Serialize(key, opts...)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("ca: tenant %q: serialise key: %w", tenant, err)
	}
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	a = &Authority{tenant: tenant, cert: cert, certPEM: certPEM, key: key, id: serial.Text(16), store: s}
	return a, certPEM, pem.EncodeToMemory(block), nil
}

// randomSerial returns a positive random 128-bit serial: unpredictable serials
// are what RFC 5280 / CA/B Forum expect, and collisions are negligible.
func randomSerial() (*big.Int, error) {
	limit := new(big.Int).Lsh(big.NewInt(1), 128)
	for {
		n, err := rand.Int(rand.Reader, limit)
		if err != nil {
			return nil, fmt.Errorf("serial: %w", err)
		}
		if n.Sign() > 0 {
			return n, nil
		}
	}
}

// subjectKeyID follows RFC 7093 method 1: the leftmost 160 bits of the SHA-256 of
// the subjectPublicKey bit string.
func subjectKeyID(pub crypto.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, fmt.Errorf("subject key id: %w", err)
	}
	var spki struct {
		Algorithm pkix.AlgorithmIdentifier
		PublicKey asn1.BitString
	}
	if _, err := asn1.Unmarshal(der, &spki); err != nil {
		return nil, fmt.Errorf("subject key id: %w", err)
	}
	sum := sha256.Sum256(spki.PublicKey.Bytes)
	return sum[:20], nil
}

func (s *Store) load(tenant, certPath, keyPath string) (*Authority, error) {
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		return nil, fmt.Errorf("ca: tenant %q: read %s: %w", tenant, certPath, err)
	}
	block, rest := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" || len(bytes.TrimSpace(rest)) > 0 {
		return nil, fmt.Errorf("ca: tenant %q: %s: want exactly one PEM CERTIFICATE block", tenant, certPath)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("ca: tenant %q: %s: %w", tenant, certPath, err)
	}
	if !cert.IsCA || cert.KeyUsage&x509.KeyUsageCertSign == 0 {
		return nil, fmt.Errorf("ca: tenant %q: %s is not a CA certificate (needs IsCA and KeyUsageCertSign)", tenant, certPath)
	}

	if fi, err := os.Stat(keyPath); err == nil && fi.Mode().Perm()&0o077 != 0 {
		s.logger().Warn("ca: key file is readable by group or others; chmod 0600", logTenant, tenant, logPath, keyPath)
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, fmt.Errorf("ca: tenant %q: read %s: %w", tenant, keyPath, err)
	}
	kb, _ := pem.Decode(keyPEM)
	if kb == nil {
		return nil, fmt.Errorf("ca: tenant %q: %s: not a PEM private key", tenant, keyPath)
	}
	encrypted := kb.Type == "ENCRYPTED PRIVATE KEY" || kb.Headers["Proc-Type"] == "4,ENCRYPTED"
	switch {
	case encrypted && s.Passphrase == nil:
		return nil, fmt.Errorf("ca: tenant %q: %s is encrypted but Store.Passphrase is not set", tenant, keyPath)
	case !encrypted && s.Passphrase != nil:
		return nil, fmt.Errorf("ca: tenant %q: %s is not encrypted but Store.Passphrase is set; re-encrypt it or unset the passphrase", tenant, keyPath)
	}
	opts := []pemutil.Options{pemutil.WithFilename(keyPath)}
	if s.Passphrase != nil {
		opts = append(opts, pemutil.WithPassword(s.Passphrase))
	}
	parsed, err := pemutil.Parse(keyPEM, opts...)
	if err != nil {
		return nil, fmt.Errorf("ca: tenant %q: key %s: %w", tenant, keyPath, err)
	}
	key, ok := parsed.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("ca: tenant %q: %s holds a %T, not a private key", tenant, keyPath, parsed)
	}
	pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(cert.PublicKey) {
		return nil, fmt.Errorf("ca: tenant %q: key %s does not match certificate %s", tenant, keyPath, certPath)
	}
	if now := s.now(); now.After(cert.NotAfter) {
		s.logger().Warn("ca: tenant CA has expired; rotate it", logTenant, tenant, logPath, certPath)
	}
	return &Authority{
		tenant:  tenant,
		cert:    cert,
		certPEM: pem.EncodeToMemory(block),
		key:     key,
		id:      cert.SerialNumber.Text(16),
		store:   s,
	}, nil
}
