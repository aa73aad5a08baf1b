package database

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluice-egress/sluice/config"
	"github.com/sluice-egress/sluice/rules"
	"github.com/sluice-egress/sluice/store"
)

// TestExisting: a read-only command never creates the SQLite file, and
// finds the one Open created.
func TestExisting(t *testing.T) {
	ctx := context.Background()
	cfg := &config.Config{DataDir: t.TempDir()}
	path := filepath.Join(cfg.DataPath(), store.FileName)
	if st, err := Existing(ctx, cfg); st != nil || err != nil {
		t.Fatalf("Existing without a store: %v %v", st, err)
	}
	if g, err := Grants(ctx, cfg, "acme"); g != nil || err != nil {
		t.Fatalf("Grants without a store: %v %v", g, err)
	}
	if _, err := os.Stat(path); err == nil {
		t.Fatal("a read created the store")
	}
	st, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	st, err = Existing(ctx, cfg)
	if err != nil || st == nil {
		t.Fatalf("Existing after Open: %v %v", st, err)
	}
	st.Close()
	if g, err := Grants(ctx, cfg, "acme"); len(g) != 0 || err != nil {
		t.Fatalf("Grants of an empty store: %v %v", g, err)
	}
}

// TestPostgresDSNMissing: a postgres store whose DSN cannot be read is an
// error, not a fallback to SQLite.
func TestPostgresDSNMissing(t *testing.T) {
	cfg := &config.Config{DataDir: t.TempDir()}
	cfg.Store.Driver = config.StorePostgres
	cfg.Store.DSNEnv = "SLUICE_TEST_DSN_UNSET_0f3a"
	if st, err := Existing(context.Background(), cfg); err == nil {
		st.Close()
		t.Fatal("no DSN, yet a store")
	}
	if _, err := os.Stat(filepath.Join(cfg.DataPath(), store.FileName)); err == nil {
		t.Fatal("fell back to SQLite")
	}
}

// Without a store a policy question is answered from the config alone, and
// no store file is created to answer it.
func TestResolvePolicyWithoutStore(t *testing.T) {
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	p, err := ResolvePolicy(context.Background(), cfg, rules.PolicyInput{Tenant: "default", Class: rules.DefaultClass})
	if err != nil || p == nil {
		t.Fatalf("ResolvePolicy: %v %v", p, err)
	}
	if _, err := os.Stat(filepath.Join(cfg.DataPath(), store.FileName)); err == nil {
		t.Error("answering a policy question created the store")
	}
	if _, err := ResolvePolicy(context.Background(), cfg, rules.PolicyInput{Tenant: "nobody.test"}); err == nil {
		t.Error("an unknown tenant resolved")
	}
}
