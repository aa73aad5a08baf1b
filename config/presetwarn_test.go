package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A class's preset whose hosts come from an operator slot left unset is said
// at start, for serve to log.
func TestPresetWarnings(t *testing.T) {
	t.Setenv("SLUICE_TEST_PW_TOKEN", "a-test-token-that-is-long-enough")
	p := filepath.Join(t.TempDir(), "sluice.yaml")
	os.WriteFile(p, []byte("tenants:\n  acme:\n    token_env: SLUICE_TEST_PW_TOKEN\n    classes:\n      agent:\n        allow:\n          - preset: debian\n      ok: {}\n"), 0o600)
	cfg, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	ws := cfg.PresetWarnings()
	if len(ws) != 1 || !strings.Contains(ws[0], "tenant acme class agent: preset debian@") || !strings.Contains(ws[0], "contributes nothing") {
		t.Errorf("serve warnings: %q", ws)
	}
}
