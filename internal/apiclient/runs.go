package apiclient

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/sluice-egress/sluice/ca"
	"github.com/sluice-egress/sluice/internal/fileutil"
)

// RunCreated is the part of POST /api/runs' answer the CLI uses.
type RunCreated struct {
	ID       string    `json:"id"`
	Tenant   string    `json:"tenant"`
	Class    string    `json:"class"`
	Expires  time.Time `json:"expires"`
	Token    string    `json:"token"`
	ProxyURL string    `json:"proxy_url"`
	CAPEM    string    `json:"ca_pem"`
	Env      []string  `json:"env"`
	// Presets are the presets the run's policy used, with how much each gave.
	Presets []PresetUse `json:"presets"`
}

// PresetUse is one preset of a run's policy: Entries it contributed, and a
// Note when it gave less than it could (an operator host slot left unset).
type PresetUse struct {
	Preset struct {
		Name    string `json:"name"`
		Version int    `json:"version"`
	} `json:"preset"`
	Origin struct {
		Kind string `json:"kind"`
	} `json:"origin"`
	Entries int    `json:"entries"`
	Note    string `json:"note,omitempty"`
}

// CreateRun posts req to /api/runs and returns the answer, decoded and whole.
func (c *Client) CreateRun(ctx context.Context, req any) (RunCreated, json.RawMessage, error) {
	var raw json.RawMessage
	if err := c.Do(ctx, http.MethodPost, "/api/runs", req, &raw); err != nil {
		return RunCreated{}, nil, err
	}
	var rc RunCreated
	if err := json.Unmarshal(raw, &rc); err != nil {
		return RunCreated{}, nil, fmt.Errorf("admin API: bad answer: %w", err)
	}
	return rc, raw, nil
}

// TrustDir is where a run's env lines expect the trust files: the directory
// the platform mounts the written files at.
const TrustDir = "/etc/sluice"

// InContainerDir rewrites the env lines that name files under TrustDir to
// name them under dir instead ("" leaves them).
func (rc *RunCreated) InContainerDir(dir string) {
	if dir == "" || dir == TrustDir {
		return
	}
	out := make([]string, len(rc.Env))
	for i, l := range rc.Env {
		k, v, ok := strings.Cut(l, "=")
		if ok && strings.HasPrefix(v, TrustDir+"/") {
			l = k + "=" + path.Join(dir, strings.TrimPrefix(v, TrustDir+"/"))
		}
		out[i] = l
	}
	rc.Env = out
}

// WriteFiles writes into dir, creating it (0700) if need be, every file the
// env lines name: ca.pem, bundle.pem (the system roots and the run's CA; the CA
// alone without a root store, as ca export does), and run.env (0600: it holds
// the run token).
func (rc RunCreated) WriteFiles(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	roots, err := ca.SystemRootsPEM()
	if err != nil {
		roots = nil
	}
	bundle := append([]byte(nil), roots...)
	if len(bundle) > 0 && bundle[len(bundle)-1] != '\n' {
		bundle = append(bundle, '\n')
	}
	bundle = append(bundle, rc.CAPEM...)
	for _, f := range []struct {
		name string
		b    []byte
		mode os.FileMode
	}{
		{ca.ExportCAFile, []byte(rc.CAPEM), 0o644},
		{ca.ExportBundleFile, bundle, 0o644},
		{"run.env", []byte(strings.Join(rc.Env, "\n") + "\n"), 0o600},
	} {
		if err := fileutil.WriteFile(filepath.Join(dir, f.name), f.b, f.mode); err != nil {
			return err
		}
	}
	return nil
}

// PresetWarnings says, one line each, which presets gave the run nothing and
// why (an unset presets.hosts slot, most often): the run would fail later on a
// host its repository needs.
func (rc RunCreated) PresetWarnings() []string {
	var out []string
	for _, p := range rc.Presets {
		if p.Entries == 0 && p.Note != "" {
			out = append(out, fmt.Sprintf("preset %s@%d (%s) contributes nothing: %s", p.Preset.Name, p.Preset.Version, p.Origin.Kind, p.Note))
		}
	}
	return out
}

// EndRun ends the run id.
func (c *Client) EndRun(ctx context.Context, id string) error {
	return c.Do(ctx, http.MethodDelete, "/api/runs/"+url.PathEscape(id), nil, nil)
}
