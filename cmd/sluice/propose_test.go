package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-egress/sluice/incident"
	"github.com/sluice-egress/sluice/internal/pgtest"
	"github.com/sluice-egress/sluice/store"
)

// TestPolicyPropose: the command drafts from the data directory's store a
// config that config check accepts.
func TestPolicyPropose(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "sluice.yaml")
	os.WriteFile(filepath.Join(dir, "acme.token"), []byte("acme-token-0123456789abcdef\n"), 0o600)
	os.WriteFile(cfgPath, []byte("data_dir: data\ntenants:\n  acme:\n    token_file: acme.token\n    classes: {agent: {}}\n"), 0o600)
	os.MkdirAll(filepath.Join(dir, "data"), 0o700)
	st, err := store.Open(context.Background(), filepath.Join(dir, "data", store.FileName))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := st.RecordObservations(context.Background(), []store.Observation{{Tenant: "acme", Class: "agent", Run: "r-1",
		Host: "api.example.test", Port: 443, Method: "GET", Path: "/v1/", Verdict: store.ObservedAllowed, Count: 3,
		FirstSeen: now, LastSeen: now}}, 0); err != nil {
		t.Fatal(err)
	}
	if err := st.InsertIncidents(context.Background(), []incident.Incident{{ID: "inc_1", Time: now, Tenant: "acme", Class: "agent",
		Run: "r-1", Kind: "deny", Reason: "host-not-allowed", Action: "block", Host: "evil.example.test", Port: 443, Method: "CONNECT"}}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	var out, errb bytes.Buffer
	if err := dispatch(context.Background(), []string{"policy", "propose", "--config", cfgPath, "--tenant", "acme", "--since", "1d"}, &out, &errb); err != nil {
		t.Fatalf("propose: %v %s", err, errb.String())
	}
	if !strings.Contains(out.String(), `- host: "api.example.test"`) || !strings.Contains(out.String(), `host "evil.example.test" ports [443]`) {
		t.Fatalf("draft:\n%s", out.String())
	}
	draft := filepath.Join(t.TempDir(), "draft.yaml")
	os.WriteFile(draft, out.Bytes(), 0o600)
	out.Reset()
	if err := dispatch(context.Background(), []string{"config", "check", "--config", draft}, &out, &errb); err != nil {
		t.Fatalf("config check of the draft: %v", err)
	}
}

// TestPolicyCheckTrace: --trace shows each entry considered and why.
func TestPolicyCheckTrace(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "sluice.yaml")
	os.WriteFile(cfg, []byte("tenants:\n  acme:\n    token_env: ACME_TOKEN_UNSET\n    classes:\n      agent:\n        allow:\n          - host: other.example.test\n          - host: api.example.test\n            methods: [GET]\n"), 0o600)
	code, out, errs := runCLI(t, "policy", "check", "--config", cfg, "--tenant", "acme", "--trace", "--method", "POST", "https://api.example.test/x")
	if code != 1 {
		t.Fatalf("a refusal exits 1, got %d %s", code, errs)
	}
	for _, want := range []string{"deny POST https://api.example.test:443/x: method-not-allowed", "trace:",
		"host api.example.test is not other.example.test", "method POST not in [GET]", "connect", "matched"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if code, out, _ := runCLI(t, "policy", "check", "--config", cfg, "--tenant", "acme", "https://api.example.test/x"); code != 0 || strings.Contains(out, "trace:") {
		t.Fatalf("without --trace: %s", out)
	}
}

// TestPolicyProposePostgres: with store.driver postgres the command reads
// the shared store, not a SQLite file in the data directory.
func TestPolicyProposePostgres(t *testing.T) {
	dsn := pgtest.New(t).NewDatabase(t)
	t.Setenv("SLUICE_TEST_PROPOSE_DSN", dsn)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "sluice.yaml")
	os.WriteFile(cfgPath, []byte("data_dir: data\nstore: {driver: postgres, dsn_env: SLUICE_TEST_PROPOSE_DSN}\n"+
		"tenants:\n  acme:\n    token_env: ACME_TOKEN_UNSET\n    classes: {agent: {}}\n"), 0o600)
	ctx := context.Background()
	st, err := store.OpenPostgres(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := st.RecordObservations(ctx, []store.Observation{{Tenant: "acme", Class: "agent", Run: "r-1",
		Host: "pg.example.test", Port: 443, Method: "GET", Path: "/", Verdict: store.ObservedAllowed, Count: 1,
		FirstSeen: now, LastSeen: now}}, 0); err != nil {
		t.Fatal(err)
	}
	st.Close()
	var out, errb bytes.Buffer
	if err := dispatch(ctx, []string{"policy", "propose", "--config", cfgPath, "--tenant", "acme"}, &out, &errb); err != nil {
		t.Fatalf("propose: %v %s", err, errb.String())
	}
	if !strings.Contains(out.String(), `- host: "pg.example.test"`) {
		t.Fatalf("draft:\n%s", out.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "data", store.FileName)); err == nil {
		t.Fatal("propose created a SQLite store")
	}
}
