// Package trust opens the tenants' CA store as the config describes it and
// exports a tenant's trust files: ca.pem, bundle.pem and sluice.env.
package trust

import (
	"fmt"
	"net/url"
	"path/filepath"
	"time"

	"github.com/sluice-egress/sluice/ca"
	"github.com/sluice-egress/sluice/ca/stepca"
	"github.com/sluice-egress/sluice/config"
	"github.com/sluice-egress/sluice/internal/credentials"
)

// Open opens the CA store under the data dir with the configured passphrase
// and the step-ca issuers of the tenants whose root lives there.
func Open(cfg *config.Config) (*ca.Store, error) {
	s := &ca.Store{Dir: filepath.Join(cfg.DataDir, "ca"), LeafTTL: time.Duration(cfg.CA.LeafTTL)}
	var err error
	if s.Issuers, err = stepCAIssuers(cfg); err != nil {
		return nil, err
	}
	if s.Passphrase, err = cfg.CAPassphrase(); err != nil {
		return nil, err
	}
	return s, nil
}

// stepCAIssuers builds the step-ca clients of the tenants whose root lives
// there (tenants.<name>.step_ca). A root or key that cannot be read is a
// start-up error.
func stepCAIssuers(cfg *config.Config) (map[string]ca.Issuer, error) {
	var out map[string]ca.Issuer
	for name, t := range cfg.Tenants {
		if t == nil || t.StepCA == nil {
			continue
		}
		sc := t.StepCA
		c := &stepca.Client{URL: sc.URL, Provisioner: sc.Provisioner, KeyID: sc.KeyID, TTL: sc.TTL()}
		if err := c.LoadFiles(cfg.ResolvePath(sc.RootFile), cfg.ResolvePath(sc.ProvisionerKeyFile)); err != nil {
			return nil, fmt.Errorf("tenants.%s.step_ca.%w", name, err)
		}
		if out == nil {
			out = map[string]ca.Issuer{}
		}
		out[name] = c
	}
	return out, nil
}

// Export writes ca.pem, bundle.pem and sluice.env (ca.Authority.ExportEnv)
// for one tenant into outDir, with the tenant's token and phantom
// credentials, and returns the env file, its lines and the token (for the
// caller to mask). containerDir, when set, is where the container will see
// outDir mounted.
func Export(cfg *config.Config, cas *ca.Store, tenant, outDir, proxyHostport, containerDir string) (envPath string, lines []string, token string, err error) {
	auth, err := cas.Authority(tenant)
	if err != nil {
		return "", nil, "", err
	}
	if token, err = cfg.Token(tenant); err != nil {
		return "", nil, "", fmt.Errorf("tenant %s: %w", tenant, err)
	}
	// The tenant's phantom credentials, under the names its tools read.
	phantoms, err := credentials.TenantEnv(cfg, tenant)
	if err != nil {
		return "", nil, "", err
	}
	envPath, lines, err = auth.ExportEnv(outDir, containerDir, &url.URL{Scheme: "http", User: url.UserPassword(tenant, token), Host: proxyHostport}, phantoms)
	return envPath, lines, token, err
}
