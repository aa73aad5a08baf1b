// Package database opens the store the config names: SQLite in the data
// directory (the default), or PostgreSQL by the DSN it references.
package database

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/sluice-egress/sluice/config"
	"github.com/sluice-egress/sluice/internal/runstore"
	"github.com/sluice-egress/sluice/rules"
	"github.com/sluice-egress/sluice/store"
)

// Open opens (creating the SQLite file if need be) the store cfg names. On
// PostgreSQL the store's Replica is this process: host name and pid.
func Open(ctx context.Context, cfg *config.Config) (*store.Store, error) {
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

// Existing opens the configured store for a command that only reads it;
// nil when the SQLite file does not exist (it never creates one).
func Existing(ctx context.Context, cfg *config.Config) (*store.Store, error) {
	if cfg.Store.Driver != config.StorePostgres {
		path := filepath.Join(cfg.DataPath(), store.FileName)
		if _, err := os.Stat(path); err != nil {
			return nil, nil
		}
		return store.Open(ctx, path)
	}
	return Open(ctx, cfg)
}

// Grants reads the tenant's approved, unexpired access requests from the
// configured store, when there is one: they are part of the effective
// policy. It never creates a store.
func Grants(ctx context.Context, cfg *config.Config, tenant string) ([]rules.Grant, error) {
	st, err := Existing(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("read grants: %w", err)
	}
	if st == nil {
		return nil, nil
	}
	defer st.Close()
	return runstore.Grants(ctx, st, tenant, time.Now())
}

// ResolvePolicy is the effective policy of in under the config's policy and
// the tenant's stored grants (Grants), now: what the gateway would enforce.
func ResolvePolicy(ctx context.Context, cfg *config.Config, in rules.PolicyInput) (*rules.EffectivePolicy, error) {
	grants, err := Grants(ctx, cfg, in.Tenant)
	if err != nil {
		return nil, err
	}
	in.Policy, in.Grants, in.Now = cfg.Policy(), grants, time.Now()
	return rules.ResolvePolicy(in)
}
