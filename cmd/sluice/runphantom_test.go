package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/sluice-egress/sluice/ca"
	"github.com/sluice-egress/sluice/config"
	"github.com/sluice-egress/sluice/internal/runstore"
	"github.com/sluice-egress/sluice/rules"
	"github.com/sluice-egress/sluice/runs"
	"github.com/sluice-egress/sluice/store"
)

// A run's answer carries its phantom env lines, and ending the run forgets
// them: the run manager is where runs and phantom credentials meet.
func TestRunsCarryAndForgetPhantoms(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "sluice.yaml")
	tok, _ := rules.NewToken()
	os.WriteFile(filepath.Join(dir, "acme.token"), []byte(tok), 0o600)
	os.WriteFile(cfgPath, []byte("version: 1\ntenants:\n  acme:\n    token_file: acme.token\n    classes:\n      agent:\n        allow: []\n"), 0o600)
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	engine, err := cfg.Compile()
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(context.Background(), filepath.Join(dir, store.FileName))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var minted, forgotten []string
	cas := &ca.Store{Dir: filepath.Join(dir, "ca")}
	m := &runs.Service{
		Store: runstore.New(st), Engine: func() *rules.Engine { return engine },
		Resolve: func(in rules.PolicyInput) (*rules.EffectivePolicy, error) {
			in.Policy = cfg.Policy()
			return rules.ResolvePolicy(in)
		},
		TenantCA: func(tenant string) ([]byte, error) {
			a, err := cas.Authority(tenant)
			if err != nil {
				return nil, err
			}
			return a.CertPEM(), nil
		},
		ProxyAddr: func() string { return "gateway.test:3128" },
		MintPhantoms: func(tenant, run string) ([]string, error) {
			minted = append(minted, tenant+"/"+run)
			return []string{"GITHUB_TOKEN=ghp_phantom-for-" + run}, nil
		},
		ForgetPhantoms: func(tenant, run string) error {
			forgotten = append(forgotten, tenant+"/"+run)
			return nil
		},
	}
	created, err := m.CreateRun(context.Background(), runs.Request{Tenant: "acme", Class: "agent", TTL: time.Hour, Actor: "test"})
	if err != nil {
		t.Fatal(err)
	}
	id := created.Run.ID
	if !slices.Contains(created.Env, "GITHUB_TOKEN=ghp_phantom-for-"+id) {
		t.Fatalf("run env lacks its phantom: %q", created.Env)
	}
	if !slices.Equal(minted, []string{"acme/" + id}) {
		t.Fatalf("minted %q", minted)
	}
	if _, err := m.EndRun(context.Background(), id, "test"); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(forgotten, []string{"acme/" + id}) {
		t.Fatalf("forgotten %q, want the ended run's phantoms", forgotten)
	}
}
