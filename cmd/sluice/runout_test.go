package main

import (
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-egress/sluice/ca"
	"github.com/sluice-egress/sluice/config"
	"github.com/sluice-egress/sluice/internal/apiclient"
)

// Every file a run's env lines name is written by --out, at the place the
// lines name once --out is mounted at --container-dir (or /etc/sluice).
func TestRunOutWritesWhatTheEnvNames(t *testing.T) {
	proxy := &url.URL{Scheme: "http", User: url.UserPassword("run_x", "fake-run-token-0123456789"), Host: "gateway.test:3128"}
	caPEM := "-----BEGIN CERTIFICATE-----\nZmFrZQ==\n-----END CERTIFICATE-----\n"
	for _, mount := range []string{"", "/run/trust"} {
		env := inContainerDir(ca.ContainerEnv(proxy, runCAPath, runBundlePath), mount)
		out := t.TempDir()
		if err := writeRunFiles(out, caPEM, env); err != nil {
			t.Fatal(err)
		}
		if mount == "" {
			mount = runTrustDir
		}
		named := 0
		for _, l := range env {
			_, v, _ := strings.Cut(l, "=")
			if strings.HasPrefix(v, "/etc/sluice/") && mount != runTrustDir {
				t.Errorf("--container-dir %s: %s still names /etc/sluice", mount, l)
			}
			if !strings.HasPrefix(v, mount+"/") {
				continue
			}
			named++
			b, err := os.ReadFile(filepath.Join(out, strings.TrimPrefix(v, mount+"/")))
			if err != nil {
				t.Errorf("%s names a file --out did not write: %v", l, err)
			} else if !strings.Contains(string(b), "ZmFrZQ==") {
				t.Errorf("%s: the file lacks the run's CA", l)
			}
		}
		if named < 2 {
			t.Fatalf("only %d env lines name trust files: %v", named, env)
		}
		if fi, err := os.Stat(filepath.Join(out, "run.env")); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("run.env: %v %v", fi, err)
		}
	}
}

// A preset whose hosts come from an operator slot left unset is said on
// stderr, by run create (from the API's answer) and by serve (the config's).
func TestPresetWarnings(t *testing.T) {
	var b strings.Builder
	var ps []apiclient.PresetUse
	if err := json.Unmarshal([]byte(`[{"preset":{"name":"debian","version":1},"origin":{"kind":"derived"},"entries":0,"note":"presets.hosts.debian_mirror is not set"},
		{"preset":{"name":"npm","version":1},"origin":{"kind":"derived"},"entries":2}]`), &ps); err != nil {
		t.Fatal(err)
	}
	warnPresets(&b, ps)
	if got := b.String(); !strings.Contains(got, "preset debian@1 (derived) contributes nothing: presets.hosts.debian_mirror") || strings.Contains(got, "npm") {
		t.Errorf("run create warnings: %q", got)
	}
	t.Setenv("SLUICE_TEST_PW_TOKEN", "a-test-token-that-is-long-enough")
	p := filepath.Join(t.TempDir(), "sluice.yaml")
	os.WriteFile(p, []byte("tenants:\n  acme:\n    token_env: SLUICE_TEST_PW_TOKEN\n    classes:\n      agent:\n        allow:\n          - preset: debian\n      ok: {}\n"), 0o600)
	cfg, err := config.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	ws := configPresetWarnings(cfg)
	if len(ws) != 1 || !strings.Contains(ws[0], "tenant acme class agent: preset debian@") || !strings.Contains(ws[0], "contributes nothing") {
		t.Errorf("serve warnings: %q", ws)
	}
}
