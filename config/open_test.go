package config

import (
	"os"
	"path/filepath"
	"testing"
)

func TestOpenDefault(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	cfg, err := Open("", dir)
	if err != nil {
		t.Fatal(err)
	}
	tokPath := filepath.Join(dir, DefaultTokenFile)
	if cfg.DataDir != dir || cfg.Tenants["default"].TokenFile != tokPath {
		t.Fatalf("data dir %s, token file %s", cfg.DataDir, cfg.Tenants["default"].TokenFile)
	}
	fi, err := os.Stat(tokPath)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v, mode %v", err, fi.Mode())
	}
	tok, err := cfg.Token("default")
	if err != nil {
		t.Fatal(err)
	}
	again, err := Open("", dir)
	if err != nil {
		t.Fatal(err)
	}
	if tok2, _ := again.Token("default"); tok2 != tok {
		t.Fatal("a second start made a new token")
	}
}

func TestOpenFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "sluice.yaml")
	os.WriteFile(p, []byte("data_dir: state\ntenants:\n  acme:\n    token_env: ACME_TOKEN\n    classes: {agent: {}}\n"), 0o600)
	cfg, err := Open(p, "")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.DataDir != filepath.Join(dir, "state") {
		t.Fatalf("data dir %s, want it beside the file", cfg.DataDir)
	}
	if _, err := os.Stat(cfg.DataDir); err != nil {
		t.Fatal("the data directory was not created")
	}
	os.WriteFile(p, []byte("nonsense: 1\n"), 0o600)
	if _, err := Open(p, ""); err == nil {
		t.Fatal("a bad file opened")
	}
	blocker := filepath.Join(dir, "file")
	os.WriteFile(blocker, nil, 0o600)
	if _, err := Open("", filepath.Join(blocker, "data")); err == nil {
		t.Fatal("an uncreatable data directory is no error")
	}
}
