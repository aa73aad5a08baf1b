package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-egress/sluice/rules"
)

// mustToken returns a fresh random token.
func mustToken(tb testing.TB) string {
	tb.Helper()
	tok, err := rules.NewToken()
	if err != nil {
		tb.Fatal(err)
	}
	return tok
}

// TestToken reads tenant tokens from files and the environment, as rules.Compile gets
// them, and never puts a token in an error.
func TestToken(t *testing.T) {
	const fileCfg = "tenants:\n  acme:\n    token_file: acme.token\n    classes: {agent: {}}\n"
	const envCfg = "tenants:\n  acme:\n    token_env: SLUICE_TEST_ACME_TOKEN\n    classes: {agent: {}}\n"
	tests := []struct {
		name    string
		cfg     string
		file    *string // content of acme.token; nil: no file
		env     *string
		wantErr string
	}{
		{name: "file", cfg: fileCfg, file: ptr("  TOKEN\n")},
		{name: "env", cfg: envCfg, env: ptr("TOKEN")},
		{name: "missing file", cfg: fileCfg, wantErr: "sluice.yaml:3: tenants.acme.token_file: "},
		{name: "missing file says how", cfg: fileCfg, wantErr: "sluice token new --tenant acme"},
		{name: "unset env names its line", cfg: envCfg, wantErr: "sluice.yaml:3: tenants.acme.token_env: "},
		{name: "empty file", cfg: fileCfg, file: ptr(" \n"), wantErr: "empty token"},
		{name: "short file", cfg: fileCfg, file: ptr("abcdefghijklmno\n"), wantErr: "shorter than 16"},
		{name: "unset env", cfg: envCfg, wantErr: "SLUICE_TEST_ACME_TOKEN: empty token"},
		{name: "short env", cfg: envCfg, env: ptr("short-secret"), wantErr: "shorter than 16"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tok := mustToken(t)
			if tt.file != nil {
				content := strings.ReplaceAll(*tt.file, "TOKEN", tok)
				if err := os.WriteFile(filepath.Join(dir, "acme.token"), []byte(content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			t.Setenv("SLUICE_TEST_ACME_TOKEN", "")
			if tt.env != nil {
				t.Setenv("SLUICE_TEST_ACME_TOKEN", strings.ReplaceAll(*tt.env, "TOKEN", tok))
			}
			cfg, err := Parse([]byte(tt.cfg), filepath.Join(dir, "sluice.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			e, err := rules.Compile(cfg.Policy(), cfg.Token)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Compile: %v, want error containing %q", err, tt.wantErr)
				}
				for _, secret := range []string{tok, "abcdefghijklmno", "short-secret"} {
					if strings.Contains(err.Error(), secret) {
						t.Errorf("error %q holds the token", err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if id, err := e.Identify("acme", tok); err != nil || id != (rules.Identity{Tenant: "acme", Class: "agent"}) {
				t.Errorf("Identify with the trimmed token = %+v, %v", id, err)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestCompileDefault(t *testing.T) {
	c := Default()
	dir := t.TempDir()
	c.DataDir = dir
	tok := mustToken(t)
	if err := os.WriteFile(c.TokenPath(c.Tenants[rules.DefaultTenant]), []byte(tok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e, err := c.Compile()
	if err != nil {
		t.Fatal(err)
	}
	id, err := e.Identify("default", tok)
	if err != nil || id != (rules.Identity{Tenant: "default", Class: "agent"}) {
		t.Fatalf("Identify = %+v, %v", id, err)
	}
	for _, q := range []rules.Query{
		{Identity: id, Host: "api.example.test", Port: 443, Stage: rules.StageConnect},
		{Identity: id, Host: "192.0.2.1", Port: 80, Method: "GET", Path: "/", Stage: rules.StageRequest},
	} {
		if d := e.Decide(q); d.Action != rules.Deny || d.Reason != rules.ReasonHostNotAllowed {
			t.Errorf("default policy: Decide(%+v) = %v %q, want deny", q, d.Action, d.Reason)
		}
	}
}

// Compile checks a config changed after loading again.
func TestCompileValidates(t *testing.T) {
	c := Default()
	c.DataDir = t.TempDir()
	os.WriteFile(c.TokenPath(c.Tenants[rules.DefaultTenant]), []byte(mustToken(t)+"\n"), 0o600)
	c.Listen.Proxy = "not an address"
	if _, err := c.Compile(); err == nil || !strings.Contains(err.Error(), "listen.proxy") {
		t.Fatalf("Compile of a bad listen.proxy: %v", err)
	}
}

// NewTokenFile writes a token Token reads, 0600, never over an existing file
// unless told to, and refuses a tenant name that names a path.
func TestNewTokenFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "acme.token")
	if _, err := NewTokenFile("acme", path, false); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v", fi, err)
	}
	b, _ := os.ReadFile(path)
	cfg := &Config{Tenants: map[string]*Tenant{"acme": {TokenFile: path}}}
	if tok, err := cfg.Token("acme"); err != nil || tok != strings.TrimSpace(string(b)) || len(tok) < 40 {
		t.Fatalf("Token reads %d chars, %v", len(tok), err)
	}
	if _, err := NewTokenFile("acme", path, false); err == nil {
		t.Fatal("overwrote an existing token file")
	}
	if _, err := NewTokenFile("acme", path, true); err != nil {
		t.Fatal(err)
	}
	if b2, _ := os.ReadFile(path); string(b2) == string(b) {
		t.Fatal("replace kept the old token")
	}
	if _, err := NewTokenFile("../x", "", false); !errors.Is(err, ErrTenantName) {
		t.Fatalf("a tenant name with a path in it: %v", err)
	}
}
