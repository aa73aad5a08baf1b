package main

import (
	"crypto/x509"
	"fmt"
	"log/slog"
	"maps"
	"net/netip"
	"slices"
	"sync/atomic"

	"github.com/sluice-egress/sluice/config"
	"github.com/sluice-egress/sluice/gateway"
	"github.com/sluice-egress/sluice/rules"
	"github.com/sluice-egress/sluice/scanner"
)

var _ gateway.Policy = (*rules.Holder)(nil)

// policyChanger is what the reloader needs of the gateway: *gateway.Gateway re-decides
// its open tunnels and closes those the new policy no longer allows.
type policyChanger interface {
	PolicyChanged() int
}

var _ policyChanger = (*gateway.Gateway)(nil)

// reloader swaps the policy for the config file's (a reload.Watcher calls Reload when
// the file changes or on SIGHUP, one at a time).
type reloader struct {
	// Path is the config file.
	Path string
	// Load reads, validates and compiles the config; an error keeps the old policy.
	Load func(path string) (*rules.Engine, *config.Config, error)
	// Holder receives the new engine.
	Holder *rules.Holder
	// Gateway, when set, re-checks open tunnels after a swap.
	Gateway policyChanger
	// Applied, when set, applies the rest of a reloaded config that takes
	// effect without a restart (upstream, scanner, credentials) after the swap.
	Applied func(cfg *config.Config)
	Logger  *slog.Logger

	current atomic.Pointer[config.Config] // the config in force
}

// Reload loads the config file and swaps the policy; on failure the previous policy
// stays.
func (r *reloader) Reload(why string) error {
	engine, cfg, err := r.Load(r.Path)
	if err != nil {
		r.Logger.Error("policy reload failed: keeping the previous policy", "why", why, "err", err)
		return err
	}
	if keys := r.current.Load().RestartOnly(cfg); len(keys) > 0 {
		r.Logger.Warn("policy reloaded, but these settings apply only after a restart", "keys", keys)
	}
	r.Holder.Swap(engine)
	r.current.Store(cfg)
	if r.Applied != nil {
		r.Applied(cfg)
	}
	closed := 0
	if r.Gateway != nil {
		closed = r.Gateway.PolicyChanged()
	}
	r.Logger.Info("policy reloaded", "why", why, "tunnels_closed", closed)
	return nil
}

// loadPolicy is the Server's reload: the config file read and compiled as at start-up,
// keeping the data directory, with every tenant's CA ready before the swap.
func (s *Server) loadPolicy(path string) (*rules.Engine, *config.Config, error) {
	cfg, err := config.Load(path)
	if err != nil {
		return nil, nil, err
	}
	cfg.DataDir = s.Config.DataDir
	cfg.Listen = s.Config.Listen // --proxy may have overridden it; listeners stay anyway
	engine, err := cfg.Compile()
	if err != nil {
		return nil, nil, err
	}
	if err := checkCredentials(cfg); err != nil {
		return nil, nil, err
	}
	for _, t := range engine.Tenants() {
		if _, err := s.cas.Authority(t); err != nil {
			return nil, nil, fmt.Errorf("tenant %s: %w", t, err)
		}
	}
	roots, err := cfg.UpstreamRoots()
	if err != nil {
		return nil, nil, err
	}
	sc, err := s.reloadScanner(cfg)
	if err != nil {
		return nil, nil, err
	}
	// Everything that can fail has been built: applyReload only swaps.
	s.staged = &stagedReload{cfg: cfg, hosts: engine.UpstreamHosts(), deny: cfg.Upstream.DenyRanges(), roots: roots, scanner: sc}
	return engine, cfg, nil
}

// stagedReload is what loadPolicy built for applyReload. Both run under the
// watcher's lock, one reload at a time.
type stagedReload struct {
	cfg     *config.Config
	hosts   map[string]netip.Addr
	deny    []netip.Prefix // upstream.deny
	roots   *x509.CertPool
	scanner *scanner.Scanner
}

// reloadScanner compiles the reloaded config's scanner. It keeps the running
// scanner's fingerprint key, canaries and phantoms, so that fingerprints,
// issued canaries and minted phantoms stay valid.
func (s *Server) reloadScanner(cfg *config.Config) (*scanner.Scanner, error) {
	sc, err := buildScanner(cfg, false)
	if err != nil {
		return nil, err
	}
	if s.scanner != nil {
		cur := s.scanner.Current()
		sc.Key, sc.Canaries, sc.Phantoms = cur.Key, cur.Canaries, cur.Phantoms
	}
	return sc, nil
}

// applyReload is the reloader's Applied: after the policy swap it installs
// what loadPolicy built for cfg — upstream.hosts and deny in the dialer, the upstream
// roots (dropping pooled upstream connections when either changed), the
// scanner — then the credentials.
func (s *Server) applyReload(cfg *config.Config) {
	if st := s.staged; st != nil && st.cfg == cfg {
		s.staged = nil
		upstreamChanged := false
		if cur := s.dialer.Load(); cur != nil && (!maps.Equal(cur.Hosts, st.hosts) || !slices.Equal(cur.ExtraDeny, st.deny)) {
			// Pooled connections are dropped below: a newly denied range
			// must not stay reachable over one.
			s.dialer.SetUpstream(st.hosts, st.deny)
			upstreamChanged = true
		}
		if s.gw != nil && (upstreamChanged || !st.roots.Equal(s.roots)) {
			s.roots = st.roots
			s.gw.SetRootCAs(st.roots)
		}
		if s.scanner != nil {
			s.scanner.Swap(st.scanner)
		}
		if s.gw != nil {
			s.gw.SetMaxWebSocketMessage(int64(st.cfg.Scanning.MaxBodyBytes))
			s.gw.SetScanBodyLimit(int64(st.cfg.Scanning.MaxBodyBytes), st.cfg.Scanning.OnOversize == config.OnOversizeForward)
		}
	}
	s.applyCredentials(cfg)
	s.reloadSandbox(cfg)
}
