package apiclient

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

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

// WriteFiles writes the run's ca.pem and run.env (mode 0600: it holds the run
// token) into dir, creating it (0700) if need be.
func (rc RunCreated) WriteFiles(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := fileutil.WriteFile(filepath.Join(dir, "ca.pem"), []byte(rc.CAPEM), 0o644); err != nil {
		return err
	}
	return fileutil.WriteFile(filepath.Join(dir, "run.env"), []byte(strings.Join(rc.Env, "\n")+"\n"), 0o600)
}

// EndRun ends the run id.
func (c *Client) EndRun(ctx context.Context, id string) error {
	return c.Do(ctx, http.MethodDelete, "/api/runs/"+url.PathEscape(id), nil, nil)
}
