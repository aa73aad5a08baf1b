package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/sluice-egress/sluice/ca"
	"github.com/sluice-egress/sluice/ca/stepca"
	"github.com/sluice-egress/sluice/config"
	"github.com/sluice-egress/sluice/internal/replica"
	"github.com/sluice-egress/sluice/internal/runstore"
	"github.com/sluice-egress/sluice/rules"
	"github.com/sluice-egress/sluice/store"
)

// openDatabase opens the store that cfg names: SQLite in the data directory
// (the default), or PostgreSQL by the DSN it references.
func openDatabase(ctx context.Context, cfg *config.Config) (*store.Store, error) {
	if cfg.Store.Driver != config.StorePostgres {
		return store.Open(ctx, filepath.Join(cfg.DataDir, store.FileName))
	}
	dsn, err := cfg.StoreDSN()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	st, err := store.OpenPostgres(ctx, dsn)
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	st.Replica = fmt.Sprintf("%s-%d", host, os.Getpid())
	return st, nil
}

// existingStore opens the configured store for a command that only reads
// it; nil when the SQLite file does not exist (it never creates one).
func existingStore(ctx context.Context, cfg *config.Config) (*store.Store, error) {
	if cfg.Store.Driver != config.StorePostgres {
		path := filepath.Join(cfg.DataPath(), store.FileName)
		if _, err := os.Stat(path); err != nil {
			return nil, nil
		}
		return store.Open(ctx, path)
	}
	return openDatabase(ctx, cfg)
}

// openReplication wires a replica to its peers, when the store has any
// (store.driver: postgres): the gateway looks up unknown run tokens, reloads
// publish their version, and the metrics show the agreement. Call it after
// openRuns and openAdmin.
func (s *Server) openReplication() {
	st := s.ops.Store
	if st == nil || !st.Notifies() {
		return
	}
	r := &replica.Replica{ID: st.Replica, Store: st, Runs: s.runs, Version: s.fileVersion, Logger: s.Logger}
	r.SetVersion(s.fileVersion())
	if s.watch != nil {
		r.Reread = func(why string) { s.watch.Now(why) }
	}
	r.Listener = &store.Listener{Store: st, OnChange: r.OnChange, Logger: s.Logger}
	s.repl = r
	s.gw.Policy = &replica.PeerPolicy{Policy: s.gw.Policy, Lookup: func(token string) bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		return s.runs.LookupToken(ctx, token)
	}}
	if s.watch != nil {
		counted := s.watch.OnResult
		s.watch.OnResult = func(ok bool) {
			if counted != nil {
				counted(ok)
			}
			if ok {
				r.PolicyLoaded()
			}
		}
	}
	s.metrics.Registry.MustRegister(r.Collectors()...)
}

// fileVersion is the version of the policy file as last loaded: the first
// bytes of its hash, or "embedded" without a file.
func (s *Server) fileVersion() string {
	if s.watch == nil {
		return "embedded"
	}
	return s.watch.Version()
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

// storedGrants reads the tenant's approved, unexpired access requests from the
// configured store, when there is one: they are part of the effective policy. It
// never creates a store.
func storedGrants(cfg *config.Config, tenant string) ([]rules.Grant, error) {
	ctx := context.Background()
	st, err := existingStore(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("read grants: %w", err)
	}
	if st == nil {
		return nil, nil
	}
	defer st.Close()
	return runstore.Grants(ctx, st, tenant, time.Now())
}
