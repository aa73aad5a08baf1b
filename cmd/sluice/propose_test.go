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
