// Package credentials turns the config's tenant credentials into the phantom
// registry's, with their secret sources.
package credentials

import (
	"fmt"

	"github.com/sluice-egress/sluice/config"
	"github.com/sluice-egress/sluice/phantom"
	"github.com/sluice-egress/sluice/scanner"
)

// FromConfig returns the tenants' credentials by tenant, with their secret
// sources (files are reread when they change). An invalid one is an error
// naming its place in the config.
func FromConfig(cfg *config.Config) (map[string][]*phantom.Credential, error) {
	out := map[string][]*phantom.Credential{}
	for tn, t := range cfg.Tenants {
		if t == nil {
			continue
		}
		for i := range t.Credentials {
			pc, err := convert(cfg, &t.Credentials[i])
			if err != nil {
				return nil, fmt.Errorf("tenants.%s.credentials[%d]: %w", tn, i, err)
			}
			out[tn] = append(out[tn], pc)
		}
	}
	return out, nil
}

// convert converts one credential.
func convert(cfg *config.Config, c *config.Credential) (*phantom.Credential, error) {
	var src phantom.Source
	if p := cfg.SecretPath(c); p != "" {
		src = &phantom.File{Path: p}
	} else {
		src = phantom.Env{Name: c.SecretEnv}
	}
	pc := &phantom.Credential{
		Name: c.Name, Secret: src, Hosts: c.HostPatterns(), Ports: c.Ports, Paths: c.Paths,
		Placement: phantom.Placement(c.Inject), Header: c.Header, Query: c.Query, User: c.User,
		Env: c.EnvNames(), Format: c.Format, Prefix: c.Prefix, Length: c.Length,
	}
	if err := pc.Check(); err != nil {
		return nil, err
	}
	return pc, nil
}

// Check builds the config's credentials and reads every real secret once: a
// credential whose secret cannot be read is an error at start and keeps the
// previous policy on reload.
func Check(cfg *config.Config) error {
	creds, err := FromConfig(cfg)
	if err != nil {
		return err
	}
	return phantom.CheckSecrets(creds)
}

// TenantEnv returns the env lines of the tenant's own phantoms for
// sluice.env, minting them on first use (in the data directory's registry,
// which the gateway reads too). Nothing when the tenant has no credentials.
func TenantEnv(cfg *config.Config, tenant string) ([]string, error) {
	t := cfg.Tenants[tenant]
	if t == nil || len(t.Credentials) == 0 {
		return nil, nil
	}
	creds, err := FromConfig(cfg)
	if err != nil {
		return nil, err
	}
	key, err := scanner.LoadOrCreateKey(cfg.DataPath())
	if err != nil {
		return nil, err
	}
	reg := &phantom.Registry{Dir: cfg.DataPath(), Key: key, Credentials: creds}
	return reg.Mint(tenant, "")
}

// Mask hides the tenant's phantoms in env lines printed at start-up.
func Mask(cfg *config.Config, tenant string, lines []string) []string {
	var names []string
	if t := cfg.Tenants[tenant]; t != nil {
		for i := range t.Credentials {
			names = append(names, t.Credentials[i].EnvNames()...)
		}
	}
	return phantom.MaskEnv(lines, names)
}
