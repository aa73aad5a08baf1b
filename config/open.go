package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/sluice-egress/sluice/internal/fileutil"
	"github.com/sluice-egress/sluice/rules"
)

// Open is the config a command runs on: the file at path (Load), or the embedded
// default when path is empty. dataDir, when set, overrides data_dir; the data
// directory is made absolute and created (0700). For the embedded default, the
// tenant's token lies in the data directory and is created on first start.
func Open(path, dataDir string) (*Config, error) {
	var cfg *Config
	if path == "" {
		cfg = Default()
	} else {
		var err error
		if cfg, err = Load(path); err != nil {
			return nil, err
		}
	}
	if dataDir != "" {
		cfg.DataDir = dataDir
	}
	cfg.DataDir = cfg.AbsPath(cfg.DataDir)
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("data dir: %w (set data_dir or --data-dir to a writable directory)", err)
	}
	if path == "" {
		for name, t := range cfg.Tenants {
			if t.TokenFile == "" {
				continue
			}
			t.TokenFile = filepath.Join(cfg.DataDir, filepath.Base(t.TokenFile))
			if err := ensureToken(t.TokenFile); err != nil {
				return nil, fmt.Errorf("tenant %s: %w", name, err)
			}
		}
	}
	return cfg, nil
}

// ensureToken creates a random token file (0600) unless one exists.
func ensureToken(path string) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	tok, err := rules.NewToken()
	if err != nil {
		return err
	}
	return fileutil.WriteFile(path, []byte(tok+"\n"), 0o600)
}
