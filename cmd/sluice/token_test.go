package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTokenNew(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "acme.token")
	var out, errb bytes.Buffer
	if code := Run(context.Background(), []string{"token", "new", "--tenant", "acme", "--out", path}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v", fi, err)
	}
	b, _ := os.ReadFile(path)
	tok := strings.TrimSpace(string(b))
	if len(tok) < 40 {
		t.Fatalf("short token %d", len(tok))
	}
	if strings.Contains(out.String(), tok) || strings.Contains(errb.String(), tok) {
		t.Fatal("the token was printed")
	}
	if !strings.Contains(out.String(), "token_file: "+path) {
		t.Errorf("output does not say how the config names it:\n%s", out.String())
	}
	// No silent overwrite; --force replaces with a new token, still 0600.
	if code := Run(context.Background(), []string{"token", "new", "--tenant", "acme", "--out", path}, &out, &errb); code == 0 {
		t.Fatal("overwrote an existing token file")
	}
	if code := Run(context.Background(), []string{"token", "new", "--tenant", "acme", "--out", path, "--force"}, &out, &errb); code != 0 {
		t.Fatalf("--force: exit %d: %s", code, errb.String())
	}
	b2, _ := os.ReadFile(path)
	if fi, _ := os.Stat(path); string(b2) == string(b) || fi.Mode().Perm() != 0o600 {
		t.Fatalf("--force: same token or mode %v", fi.Mode())
	}
	if code := Run(context.Background(), []string{"token", "new", "--tenant", "../x"}, &out, &errb); code == 0 {
		t.Fatal("a tenant name with a path in it was accepted")
	}
}

// config check names the line that points at a missing token file, and
// how to make one; after `token new` the same config checks.
func TestConfigCheckNamesTheTokenLine(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "sluice.yaml")
	os.WriteFile(cfg, []byte("data_dir: data\ntenants:\n  acme:\n    token_file: acme.token\n    classes: {agent: {}}\n"), 0o600)
	var out, errb bytes.Buffer
	if code := Run(context.Background(), []string{"config", "check", "--config", cfg}, &out, &errb); code != 1 ||
		!strings.Contains(errb.String(), "sluice.yaml:4: tenants.acme.token_file: ") || !strings.Contains(errb.String(), "sluice token new") {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	errb.Reset()
	if code := Run(context.Background(), []string{"token", "new", "--tenant", "acme", "--out", filepath.Join(dir, "acme.token")}, &out, &errb); code != 0 {
		t.Fatal(errb.String())
	}
	if code := Run(context.Background(), []string{"config", "check", "--config", cfg}, &out, &errb); code != 0 {
		t.Fatalf("after token new: exit %d: %s", code, errb.String())
	}
}
