package main

import (
	"context"
	"errors"
	"net/url"

	"github.com/sluice-egress/sluice/ca"
	"github.com/sluice-egress/sluice/config"
	"github.com/sluice-egress/sluice/internal/runstore"
	"github.com/sluice-egress/sluice/rules"
	"github.com/sluice-egress/sluice/runs"
)

// Where a run's container sees the trust files (the platform mounts ca_pem there).
const (
	runCAPath     = "/etc/sluice/ca.pem"
	runBundlePath = "/etc/sluice/bundle.pem"
)

// currentConfig is the configuration in force: the last one reloaded, or the one
// the server started with.
func (s *Server) currentConfig() *config.Config {
	if s.reload != nil {
		if st, ok := s.reload.Current(); ok {
			return st.cfg
		}
	}
	return s.Config
}

// openRuns builds the runs service, re-registers stored runs and installs the grants:
// before the proxy serves, so that a restart keeps every live run's token working.
func (s *Server) openRuns() error {
	s.runs = &runs.Service{
		Store:  runstore.New(s.ops.Store),
		Engine: func() *rules.Engine { return s.policy.Engine() },
		Resolve: func(in rules.PolicyInput) (*rules.EffectivePolicy, error) {
			cfg := s.currentConfig()
			if cfg == nil {
				return nil, errors.New("no policy loaded")
			}
			in.Policy = cfg.Policy()
			return rules.ResolvePolicy(in)
		},
		TenantCA: func(tenant string) ([]byte, error) {
			auth, err := s.cas.Authority(tenant)
			if err != nil {
				return nil, err
			}
			return auth.CertPEM(), nil
		},
		Gateway: func() runs.Gateway {
			if s.gw == nil {
				return nil
			}
			return s.gw
		},
		ProxyAddr: func() string {
			if s.proxyLn == nil {
				return reachableProxy(s.Config.Listen.Proxy)
			}
			return reachableProxy(s.ProxyAddr())
		},
		Env: func(proxy *url.URL) []string { return ca.ContainerEnv(proxy, runCAPath, runBundlePath) },
		// The registry is set: openCredentials ran before.
		MintPhantoms:   func(tenant, run string) ([]string, error) { return s.phantoms.Mint(tenant, run) },
		ForgetPhantoms: s.phantoms.Forget,
		Sandboxes:      s.sandbox.Sandboxes(),
		Interval:       s.RunsInterval,
		Logger:         s.Logger,
	}
	return s.runs.Open(context.Background())
}
