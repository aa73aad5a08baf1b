package trust

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-egress/sluice/config"
	"github.com/sluice-egress/sluice/rules"
)

// TestExport: the tenant's trust files are written, the env file holds the
// token in the proxy URL, and a tenant the config does not know is an error.
func TestExport(t *testing.T) {
	dir := t.TempDir()
	tok, _ := rules.NewToken()
	os.WriteFile(filepath.Join(dir, "acme.token"), []byte(tok), 0o600)
	p := filepath.Join(dir, "sluice.yaml")
	os.WriteFile(p, []byte("version: 1\ndata_dir: data\ntenants:\n  acme:\n    token_file: acme.token\n"), 0o600)
	cfg, err := config.Open(p, "")
	if err != nil {
		t.Fatal(err)
	}
	cas, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "export")
	envPath, lines, token, err := Export(cfg, cas, "acme", out, "127.0.0.1:3128", "")
	if err != nil {
		t.Fatal(err)
	}
	if token != tok || !strings.Contains(strings.Join(lines, "\n"), "acme:"+tok+"@127.0.0.1:3128") {
		t.Fatalf("token %q, lines %q", token, lines)
	}
	for _, f := range []string{envPath, filepath.Join(out, "ca.pem"), filepath.Join(out, "bundle.pem")} {
		if _, err := os.Stat(f); err != nil {
			t.Error(err)
		}
	}
	if _, _, _, err := Export(cfg, cas, "nobody", filepath.Join(dir, "x"), "127.0.0.1:3128", ""); err == nil {
		t.Error("an unknown tenant was exported")
	}
}

// TestOpenStepCA: a step-ca root that cannot be read is an error naming the
// tenant's key.
func TestOpenStepCA(t *testing.T) {
	cfg := &config.Config{DataDir: t.TempDir(), Tenants: map[string]*config.Tenant{
		"acme": {StepCA: &config.StepCA{URL: "https://ca.example.test", Provisioner: "p", RootFile: filepath.Join(t.TempDir(), "missing.pem")}}}}
	if _, err := Open(cfg); err == nil || !strings.Contains(err.Error(), "tenants.acme.step_ca.") {
		t.Fatalf("err = %v", err)
	}
}
