// Package stepca has a tenant's intermediate CA issued by step-ca, through its
// sign API with a JWK provisioner: the ca package's Issuer for replicas.
package stepca

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"strings"
	"time"

	"github.com/sluice-egress/sluice/ca"
)

// DefaultTTL is the intermediate's lifetime asked for when Client.TTL is zero:
// hours, so that a replica's stolen key is worth little for long.
const DefaultTTL = 8 * time.Hour

// tokenLife bounds the one-time token: step-ca accepts it once, for minutes.
const tokenLife = 5 * time.Minute

// Client asks one step-ca (one tenant's root) for intermediates. URL, Root,
// Provisioner and Key are required.
type Client struct {
	// URL is step-ca's base URL ("https://step-ca.test:9000").
	URL string
	// Root is the tenant's root: step-ca's TLS certificate is verified
	// against it, every intermediate must chain to it, and it is what
	// sandboxes trust.
	Root *x509.Certificate
	// Provisioner is the name of a JWK provisioner whose X.509 template
	// issues CAs limited to signing leaves (docs/scaling.md).
	Provisioner string
	// Key is the provisioner's private key (P-256).
	Key *ecdsa.PrivateKey
	// KeyID is the provisioner key's id. Empty: its RFC 7638 thumbprint,
	// which is what step sets.
	KeyID string
	// TTL is the intermediate's lifetime. Zero: DefaultTTL.
	TTL time.Duration
	// HTTPClient nil: one that trusts Root only.
	HTTPClient *http.Client
	// Now is the clock for tokens. Nil: time.Now.
	Now func() time.Time
}

var _ ca.Issuer = (*Client)(nil)

// Issue has step-ca sign csrDER (a CSR whose common name is also its only
// DNS name, as ca.Store makes them) and returns the intermediate with the
// chain step-ca sent, up to Root.
func (c *Client) Issue(ctx context.Context, tenant string, csrDER []byte) (*ca.Issued, error) {
	csr, err := x509.ParseCertificateRequest(csrDER)
	if err != nil {
		return nil, fmt.Errorf("stepca: %w", err)
	}
	url := strings.TrimSuffix(c.URL, "/") + "/1.0/sign"
	ott, err := c.token(url, csr.Subject.CommonName)
	if err != nil {
		return nil, err
	}
	ttl := c.TTL
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	body, _ := json.Marshal(map[string]string{
		"csr":      string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: csrDER})),
		"ott":      ott,
		"notAfter": ttl.String(),
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("stepca: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.httpClient().Do(req)
	if err != nil {
		return nil, fmt.Errorf("stepca: tenant %s: %w", tenant, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("stepca: tenant %s: %w", tenant, err)
	}
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		var e struct {
			Message string `json:"message"`
		}
		json.Unmarshal(b, &e)
		return nil, fmt.Errorf("stepca: tenant %s: sign answered %s: %s", tenant, resp.Status, e.Message)
	}
	var out struct {
		Crt       string   `json:"crt"`
		CA        string   `json:"ca"`
		CertChain []string `json:"certChain"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("stepca: tenant %s: sign answer: %w", tenant, err)
	}
	chain := out.CertChain
	if len(chain) == 0 {
		chain = []string{out.Crt, out.CA}
	}
	var certs []*x509.Certificate
	for _, p := range chain {
		cert, err := parsePEM(p)
		if err != nil {
			return nil, fmt.Errorf("stepca: tenant %s: sign answer: %w", tenant, err)
		}
		certs = append(certs, cert)
	}
	iss := &ca.Issued{Certificate: certs[0], Root: c.Root}
	for _, m := range certs[1:] {
		if !m.Equal(c.Root) { // the root is trusted, never sent
			iss.Chain = append(iss.Chain, m)
		}
	}
	return iss, nil
}

func parsePEM(s string) (*x509.Certificate, error) {
	b, _ := pem.Decode([]byte(s))
	if b == nil || b.Type != "CERTIFICATE" {
		return nil, errors.New("not a PEM certificate")
	}
	return x509.ParseCertificate(b.Bytes)
}

func (c *Client) httpClient() *http.Client {
	if c.HTTPClient != nil {
		return c.HTTPClient
	}
	pool := x509.NewCertPool()
	pool.AddCert(c.Root)
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		Proxy:           nil, // step-ca is reached directly, never through a proxy
		TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
	}}
}

// token is the one-time token step-ca's JWK provisioner accepts: a JWT
// signed ES256 with the provisioner's key, for this audience and subject.
func (c *Client) token(aud, subject string) (string, error) {
	if c.Key == nil || c.Key.Curve != elliptic.P256() {
		return "", errors.New("stepca: the provisioner key must be P-256")
	}
	now := time.Now()
	if c.Now != nil {
		now = c.Now()
	}
	kid := c.KeyID
	if kid == "" {
		kid = Thumbprint(&c.Key.PublicKey)
	}
	jti := make([]byte, 16)
	rand.Read(jti)
	header, _ := json.Marshal(map[string]string{"alg": "ES256", "kid": kid, "typ": "JWT"})
	claims, _ := json.Marshal(map[string]any{
		"iss": c.Provisioner, "aud": aud, "sub": subject, "sans": []string{subject},
		"iat": now.Unix(), "nbf": now.Add(-time.Minute).Unix(), "exp": now.Add(tokenLife).Unix(),
		"jti": hex.EncodeToString(jti),
	})
	signing := b64(header) + "." + b64(claims)
	sum := sha256.Sum256([]byte(signing))
	r, s, err := ecdsa.Sign(rand.Reader, c.Key, sum[:])
	if err != nil {
		return "", fmt.Errorf("stepca: sign token: %w", err)
	}
	sig := make([]byte, 64) // JWS ES256: r and s, 32 bytes each, big-endian
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	return signing + "." + b64(sig), nil
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// Thumbprint is a P-256 public key's RFC 7638 JWK thumbprint: step's key id.
func Thumbprint(k *ecdsa.PublicKey) string {
	x, y := coord(k.X), coord(k.Y)
	// Members in lexicographic order, no whitespace: RFC 7638 section 3.
	j := `{"crv":"P-256","kty":"EC","x":"` + b64(x) + `","y":"` + b64(y) + `"}`
	sum := sha256.Sum256([]byte(j))
	return b64(sum[:])
}

// PublicJWK is the provisioner key as step-ca's ca.json holds it.
func PublicJWK(k *ecdsa.PublicKey) map[string]string {
	return map[string]string{"use": "sig", "kty": "EC", "kid": Thumbprint(k), "crv": "P-256", "alg": "ES256",
		"x": b64(coord(k.X)), "y": b64(coord(k.Y))}
}

func coord(n *big.Int) []byte {
	b := make([]byte, 32)
	n.FillBytes(b)
	return b
}
