package apiclient

import (
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-egress/sluice/ca"
)

// Every file a run's env lines name is written by WriteFiles, at the place the
// lines name once the directory is mounted at InContainerDir's (or TrustDir).
func TestRunFilesWriteWhatTheEnvNames(t *testing.T) {
	proxy := &url.URL{Scheme: "http", User: url.UserPassword("run_x", "fake-run-token-0123456789"), Host: "gateway.test:3128"}
	caPEM := "-----BEGIN CERTIFICATE-----\nZmFrZQ==\n-----END CERTIFICATE-----\n"
	for _, mount := range []string{"", "/run/trust"} {
		rc := RunCreated{CAPEM: caPEM, Env: ca.ContainerEnv(proxy, TrustDir+"/ca.pem", TrustDir+"/bundle.pem")}
		rc.InContainerDir(mount)
		out := t.TempDir()
		if err := rc.WriteFiles(out); err != nil {
			t.Fatal(err)
		}
		if mount == "" {
			mount = TrustDir
		}
		named := 0
		for _, l := range rc.Env {
			_, v, _ := strings.Cut(l, "=")
			if strings.HasPrefix(v, "/etc/sluice/") && mount != TrustDir {
				t.Errorf("container dir %s: %s still names /etc/sluice", mount, l)
			}
			if !strings.HasPrefix(v, mount+"/") {
				continue
			}
			named++
			b, err := os.ReadFile(filepath.Join(out, strings.TrimPrefix(v, mount+"/")))
			if err != nil {
				t.Errorf("%s names a file WriteFiles did not write: %v", l, err)
			} else if !strings.Contains(string(b), "ZmFrZQ==") {
				t.Errorf("%s: the file lacks the run's CA", l)
			}
		}
		if named < 2 {
			t.Fatalf("only %d env lines name trust files: %v", named, rc.Env)
		}
		if fi, err := os.Stat(filepath.Join(out, "run.env")); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("run.env: %v %v", fi, err)
		}
	}
}

// A preset whose hosts come from an operator slot left unset is said, from
// the API's answer; one that contributed is not.
func TestPresetWarnings(t *testing.T) {
	var rc RunCreated
	if err := json.Unmarshal([]byte(`{"presets": [{"preset":{"name":"debian","version":1},"origin":{"kind":"derived"},"entries":0,"note":"presets.hosts.debian_mirror is not set"},
		{"preset":{"name":"npm","version":1},"origin":{"kind":"derived"},"entries":2}]}`), &rc); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(rc.PresetWarnings(), "\n")
	if !strings.Contains(got, "preset debian@1 (derived) contributes nothing: presets.hosts.debian_mirror") || strings.Contains(got, "npm") {
		t.Errorf("run create warnings: %q", got)
	}
}
