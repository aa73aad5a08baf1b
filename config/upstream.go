package config

import (
	"crypto/x509"
	"fmt"
	"os"
)

// UpstreamRoots returns the roots upstream TLS is verified against: the system
// pool plus upstream.extra_roots.
func (c *Config) UpstreamRoots() (*x509.CertPool, error) {
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	for _, p := range c.Upstream.ExtraRoots {
		path := c.AbsPath(p)
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("upstream.extra_roots: %w", err)
		}
		if !pool.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("upstream.extra_roots: %s holds no PEM certificate", path)
		}
	}
	return pool, nil
}
