package credentials

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-egress/sluice/config"
	"github.com/sluice-egress/sluice/rules"
)

func load(t *testing.T, secretFile string) *config.Config {
	t.Helper()
	dir := t.TempDir()
	tok, _ := rules.NewToken()
	os.WriteFile(filepath.Join(dir, "acme.token"), []byte(tok), 0o600)
	os.WriteFile(filepath.Join(dir, "gh.secret"), []byte("real-secret-value-for-tests-0000"), 0o600)
	p := filepath.Join(dir, "sluice.yaml")
	os.WriteFile(p, []byte(`version: 1
data_dir: data
tenants:
  acme:
    token_file: acme.token
    classes: {agent: {allow: [{host: api.example.test}]}}
    credentials:
      - {name: github, secret_file: `+secretFile+`, hosts: [api.example.test], env: [GITHUB_TOKEN], prefix: ghp_, length: 40}
  other:
    token_file: acme.token
`), 0o600)
	cfg, err := config.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	cfg.DataDir = filepath.Join(dir, "data")
	os.MkdirAll(cfg.DataDir, 0o700)
	return cfg
}

// TestFromConfig: each tenant gets its credentials, bound to their hosts;
// one whose secret cannot be read fails Check.
func TestFromConfig(t *testing.T) {
	cfg := load(t, "gh.secret")
	creds, err := FromConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(creds["acme"]) != 1 || creds["acme"][0].Name != "github" || len(creds["other"]) != 0 {
		t.Fatalf("credentials %v", creds)
	}
	if err := Check(cfg); err != nil {
		t.Fatal(err)
	}
	if err := Check(load(t, "missing.secret")); err == nil {
		t.Fatal("a credential whose secret cannot be read passed Check")
	}
}

// TestTenantEnv: the tenant's phantom goes into its env lines, not the real
// secret, and Mask hides it when printed; a tenant without credentials gets
// nothing.
func TestTenantEnv(t *testing.T) {
	cfg := load(t, "gh.secret")
	lines, err := TenantEnv(cfg, "acme")
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "GITHUB_TOKEN=ghp_") || strings.Contains(lines[0], "real-secret") {
		t.Fatalf("env lines %q", lines)
	}
	if m := Mask(cfg, "acme", lines); len(m) != 1 || strings.Contains(m[0], lines[0][len("GITHUB_TOKEN="):]) {
		t.Fatalf("masked %q", m)
	}
	if lines, err := TenantEnv(cfg, "other"); err != nil || lines != nil {
		t.Fatalf("other: %q %v", lines, err)
	}
}
