package main

import (
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/sluice-egress/sluice/ca"
	"github.com/sluice-egress/sluice/internal/apiclient"
	"github.com/sluice-egress/sluice/internal/fileutil"
)

// runTrustDir is where a run's env lines expect the trust files (runCAPath,
// runBundlePath): the directory the platform mounts --out at.
const runTrustDir = "/etc/sluice"

// inContainerDir rewrites env lines that name files under runTrustDir to
// name them under dir instead ("" leaves them).
func inContainerDir(lines []string, dir string) []string {
	if dir == "" || dir == runTrustDir {
		return lines
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		k, v, ok := strings.Cut(l, "=")
		if ok && strings.HasPrefix(v, runTrustDir+"/") {
			l = k + "=" + path.Join(dir, strings.TrimPrefix(v, runTrustDir+"/"))
		}
		out[i] = l
	}
	return out
}

// writeRunFiles writes into dir every file the env lines name (ca.pem, and
// bundle.pem: the system roots and the run's CA), and run.env (0600, it
// holds the run token).
func writeRunFiles(dir, caPEM string, env []string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	roots, err := ca.SystemRootsPEM()
	if err != nil {
		roots = nil // the bundle is then the run's CA alone, as ca export does
	}
	bundle := append([]byte(nil), roots...)
	if len(bundle) > 0 && bundle[len(bundle)-1] != '\n' {
		bundle = append(bundle, '\n')
	}
	bundle = append(bundle, caPEM...)
	for _, f := range []struct {
		name string
		b    []byte
		mode os.FileMode
	}{
		{ca.ExportCAFile, []byte(caPEM), 0o644},
		{ca.ExportBundleFile, bundle, 0o644},
		{"run.env", []byte(strings.Join(env, "\n") + "\n"), 0o600},
	} {
		if err := fileutil.WriteFile(filepath.Join(dir, f.name), f.b, f.mode); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
	}
	return nil
}

// warnPresets says on stderr which presets gave the run nothing, and why
// (an unset presets.hosts slot, most often): otherwise only --json shows it,
// and the run fails later on a host its repository needs.
func warnPresets(w io.Writer, ps []apiclient.PresetUse) {
	for _, p := range ps {
		if p.Entries == 0 && p.Note != "" {
			fmt.Fprintf(w, "warning: preset %s@%d (%s) contributes nothing: %s\n", p.Preset.Name, p.Preset.Version, p.Origin.Kind, p.Note)
		}
	}
}
