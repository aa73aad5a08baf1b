package main

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-egress/sluice/ca"
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
