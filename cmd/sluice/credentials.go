package main

import (
	"github.com/sluice-egress/sluice/config"
	"github.com/sluice-egress/sluice/internal/credentials"
	"github.com/sluice-egress/sluice/phantom"
	"github.com/sluice-egress/sluice/scanner"
)

// openCredentials builds the phantom registry, hooks it into the scanner (a
// phantom out of place is a finding) and the gateway (the swap), and mints
// the tenants' own phantoms so that exported env files hold them. The real
// secrets are read now once, so that a missing one is a start-up error.
func (s *Server) openCredentials(sc *scanner.Scanner) error {
	if err := credentials.Check(s.Config); err != nil {
		return err
	}
	creds, _ := credentials.FromConfig(s.Config) // checked
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

// applyCredentials installs a reloaded config's credentials: new bindings,
// hosts and secret references apply from the next request on, and new
// credentials get their phantoms (exported by the next `sluice ca export`).
func (s *Server) applyCredentials(cfg *config.Config) {
	if s.phantoms == nil {
		return
	}
	creds, err := credentials.FromConfig(cfg)
	if err != nil { // checked by loadPolicy before the swap
		s.Logger.Error("credentials not reloaded", "err", err)
		return
	}
	s.phantoms.SetCredentials(creds)
	if err := s.phantoms.MintTenants(creds); err != nil {
		s.Logger.Error("phantoms not minted after reload", "err", err)
	}
}
