package main

import (
	"fmt"

	"github.com/sluice-egress/sluice/config"
	"github.com/sluice-egress/sluice/phantom"
	"github.com/sluice-egress/sluice/scanner"
)

// phantomCredentials turns the tenants' credentials from the config into the
// registry's, with their secret sources (files are reread when they change).
func phantomCredentials(cfg *config.Config) (map[string][]*phantom.Credential, error) {
	out := map[string][]*phantom.Credential{}
	for tn, t := range cfg.Tenants {
		if t == nil {
			continue
		}
		for i := range t.Credentials {
			c := &t.Credentials[i]
			pc, err := phantomCredential(cfg, c)
			if err != nil {
				return nil, fmt.Errorf("tenants.%s.credentials[%d]: %w", tn, i, err)
			}
			out[tn] = append(out[tn], pc)
		}
	}
	return out, nil
}

// phantomCredential converts one credential.
func phantomCredential(cfg *config.Config, c *config.Credential) (*phantom.Credential, error) {
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

// openCredentials builds the phantom registry, hooks it into the scanner (a
// phantom out of place is a finding) and the gateway (the swap), and mints
// the tenants' own phantoms so that exported env files hold them. The real
// secrets are read now once, so that a missing one is a start-up error.
func (s *Server) openCredentials(sc *scanner.Scanner) error {
	if err := checkCredentials(s.Config); err != nil {
		return err
	}
	creds, _ := phantomCredentials(s.Config) // checked
	reg := &phantom.Registry{Dir: s.Config.DataPath(), Key: sc.Key, Credentials: creds}
	if err := reg.MintTenants(creds); err != nil {
		return err
	}
	sc.Phantoms = reg
	s.gw.Credentials = reg
	s.phantoms = reg
	if n := len(creds); n > 0 {
		s.Logger.Info("phantom credentials", "tenants", n)
	}
	return nil
}

// checkCredentials builds the config's credentials and reads every real
// secret once: a credential whose secret cannot be read is an error at start
// and keeps the previous policy on reload.
func checkCredentials(cfg *config.Config) error {
	creds, err := phantomCredentials(cfg)
	if err != nil {
		return err
	}
	return phantom.CheckSecrets(creds)
}

// applyCredentials installs a reloaded config's credentials: new bindings,
// hosts and secret references apply from the next request on, and new
// credentials get their phantoms (exported by the next `sluice ca export`).
func (s *Server) applyCredentials(cfg *config.Config) {
	if s.phantoms == nil {
		return
	}
	creds, err := phantomCredentials(cfg)
	if err != nil { // checked by loadPolicy before the swap
		s.Logger.Error("credentials not reloaded", "err", err)
		return
	}
	s.phantoms.SetCredentials(creds)
	if err := s.phantoms.MintTenants(creds); err != nil {
		s.Logger.Error("phantoms not minted after reload", "err", err)
	}
}

// tenantPhantomEnv returns the env lines of the tenant's own phantoms for
// sluice.env, minting them on first use (in the data directory's registry,
// which the gateway reads too). Nothing when the tenant has no credentials.
func tenantPhantomEnv(cfg *config.Config, tenant string) ([]string, error) {
	t := cfg.Tenants[tenant]
	if t == nil || len(t.Credentials) == 0 {
		return nil, nil
	}
	creds, err := phantomCredentials(cfg)
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

// maskPhantoms hides the tenant's phantoms in env lines printed at start-up.
func maskPhantoms(cfg *config.Config, tenant string, lines []string) []string {
	var names []string
	if t := cfg.Tenants[tenant]; t != nil {
		for i := range t.Credentials {
			names = append(names, t.Credentials[i].EnvNames()...)
		}
	}
	return phantom.MaskEnv(lines, names)
}
