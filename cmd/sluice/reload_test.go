package main

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-egress/sluice/config"
	"github.com/sluice-egress/sluice/internal/reload"
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

type changerFunc func() int

func (f changerFunc) PolicyChanged() int { return f() }

func TestReloader(t *testing.T) {
	dir := t.TempDir()
	e1, cfg1 := compileText(t, dir, "a.example.test")
	e2, cfg2 := compileText(t, dir, "b.example.test")
	h := rules.NewHolder(e1)
	changed := 0
	var log bytes.Buffer
	next := struct {
		e   *rules.Engine
		c   *config.Config
		err error
	}{}
	r := &reloader{Path: filepath.Join(dir, "sluice.yaml"), Holder: h, Gateway: changerFunc(func() int { changed++; return 0 }),
		Logger: slog.New(slog.NewTextHandler(&log, nil)),
		Load:   func(string) (*rules.Engine, *config.Config, error) { return next.e, next.c, next.err }}
	r.current.Store(cfg1)
	acme := rules.Identity{Tenant: "acme", Class: "agent"}
	allowed := func(host string) bool {
		return h.Decide(rules.Query{Identity: acme, Host: host, Port: 443, Stage: rules.StageConnect}).Action != rules.Deny
	}

	next.err = errors.New("config: bad thing")
	if r.Reload("test") == nil || !allowed("a.example.test") || changed != 0 || r.current.Load() != cfg1 {
		t.Fatal("a failed reload changed the policy")
	}
	next.e, next.c, next.err = e2, cfg2, nil
	if r.Reload("test") != nil || allowed("a.example.test") || !allowed("b.example.test") || changed != 1 || r.current.Load() != cfg2 {
		t.Fatal("a good reload did not swap the policy")
	}
	if !strings.Contains(log.String(), "bad thing") {
		t.Errorf("the failure's reason is not logged: %s", log.String())
	}
}

func TestReloaderPollsTheFile(t *testing.T) {
	dir := t.TempDir()
	e1, cfg1 := compileText(t, dir, "a.example.test")
	h := rules.NewHolder(e1)
	s := &Server{Config: cfg1}
	s.cas, _ = caStore(&config.Config{DataDir: filepath.Join(dir, "data")})
	r := &reloader{Path: cfg1.Path, Holder: h, Load: s.loadPolicy, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	r.current.Store(cfg1)
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
