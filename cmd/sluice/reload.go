package main

import (
	"crypto/x509"
	"fmt"
	"maps"
	"net/netip"
	"slices"

	"github.com/sluice-egress/sluice/config"
	"github.com/sluice-egress/sluice/gateway"
	"github.com/sluice-egress/sluice/internal/credentials"
	"github.com/sluice-egress/sluice/rules"
	"github.com/sluice-egress/sluice/scanner"
)

var _ gateway.Policy = (*rules.Holder)(nil)

// loadPolicy is the Server's reload: the config file read and compiled as at start-up,
// keeping the data directory, with every tenant's CA ready before the swap.
func (s *Server) loadPolicy(path string) (*stagedReload, error) {
	cfg, err := config.Load(path)
	if err != nil {
		return nil, err
	}
	cfg.DataDir = s.Config.DataDir
	cfg.Listen = s.Config.Listen // --proxy may have overridden it; listeners stay anyway
	engine, err := cfg.Compile()
	if err != nil {
		return nil, err
	}
	if err := credentials.Check(cfg); err != nil {
		return nil, err
	}
	for _, t := range engine.Tenants() {
		if _, err := s.cas.Authority(t); err != nil {
			return nil, fmt.Errorf("tenant %s: %w", t, err)
		}
	}
	roots, err := cfg.UpstreamRoots()
	if err != nil {
		return nil, err
	}
	sc, err := s.scanner.Rebuild(cfg.ScannerOptions(false))
	if err != nil {
		return nil, err
	}
	// Everything that can fail has been built: applyReload only swaps.
	return &stagedReload{engine: engine, cfg: cfg, hosts: engine.UpstreamHosts(), deny: cfg.Upstream.DenyRanges(), roots: roots, scanner: sc}, nil
}

// stagedReload is what loadPolicy built for applyReload (and, at start-up,
// the config in force). Both run under the watcher's lock, one reload at a time.
type stagedReload struct {
	engine  *rules.Engine
	cfg     *config.Config
	hosts   map[string]netip.Addr
	deny    []netip.Prefix // upstream.deny
	roots   *x509.CertPool
	scanner *scanner.Scanner
}

// applyReload installs what loadPolicy built: the policy, then upstream.hosts and
// deny in the dialer, the upstream roots (dropping pooled upstream connections
// when either changed), the scanner and its limits, the credentials and the
// sandbox sources; last, open tunnels the new policy no longer allows are closed.
func (s *Server) applyReload(st *stagedReload) []any {
	s.policy.Swap(st.engine)
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
		s.gw.SetScanBodyLimit(int64(st.cfg.Scanning.MaxBodyBytes), st.cfg.Scanning.ForwardsOversize())
	}
	s.applyCredentials(st.cfg)
	s.reloadSandbox(st.cfg)
	s.review.modes.Set(st.cfg.ShadowClasses())
	closed := 0
	if s.gw != nil {
		closed = s.gw.PolicyChanged()
	}
	return []any{"tunnels_closed", closed}
}

// restartOnly is the reload's RestartOnly: config.RestartOnly.
func restartOnly(cur, next *stagedReload) []string { return cur.cfg.RestartOnly(next.cfg) }
