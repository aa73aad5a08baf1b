package main

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluice-egress/sluice/config"
	"github.com/sluice-egress/sluice/internal/reload"
	"github.com/sluice-egress/sluice/internal/trust"
	"github.com/sluice-egress/sluice/rules"
)

// compileText writes a config with a token beside it and compiles it.
func compileText(t *testing.T, dir, allowHost string) (*rules.Engine, *config.Config) {
	t.Helper()
	tok := filepath.Join(dir, "acme.token")
	if _, err := os.Stat(tok); err != nil {
		os.WriteFile(tok, []byte("0123456789abcdef0123\n"), 0o600)
	}
	p := filepath.Join(dir, "sluice.yaml")
	os.WriteFile(p, []byte("tenants:\n  acme:\n    token_file: acme.token\n    classes:\n      agent:\n        allow:\n          - host: "+allowHost+"\n"), 0o600)
	cfg, err := config.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	e, err := cfg.Compile()
	if err != nil {
		t.Fatal(err)
	}
	return e, cfg
}

// The Server's reload, as a Watcher runs it, loads a changed file and swaps
// the policy (internal/reload's TestSwap tests the two steps themselves).
func TestReloaderPollsTheFile(t *testing.T) {
	dir := t.TempDir()
	e1, cfg1 := compileText(t, dir, "a.example.test")
	h := rules.NewHolder(e1)
	s := &Server{Config: cfg1, policy: h}
	s.cas, _ = trust.Open(&config.Config{DataDir: filepath.Join(dir, "data")})
	r := &reload.Swap[*stagedReload]{Path: cfg1.Path, Load: s.loadPolicy, RestartOnly: restartOnly, Apply: s.applyReload,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	r.Store(&stagedReload{engine: e1, cfg: cfg1})
	w := &reload.Watcher{Path: cfg1.Path, Reload: r.Reload, Interval: 20 * time.Millisecond}
	w.Start()
	ctx := t.Context()
	go w.Run(ctx)
	compileText(t, dir, "c.example.test") // rewrites the file
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if ok, _ := w.Results(); ok == 1 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	d := h.Decide(rules.Query{Identity: rules.Identity{Tenant: "acme", Class: "agent"}, Host: "c.example.test", Port: 443, Stage: rules.StageConnect})
	if d.Action != rules.Inspect {
		t.Fatalf("the changed file was not loaded: %+v", d)
	}
}
