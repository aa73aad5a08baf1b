package main

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/sluice-egress/sluice/config"
	"github.com/sluice-egress/sluice/internal/fileutil"
	"github.com/sluice-egress/sluice/rules"
)

// loadConfig reads the config file, or takes the embedded default when path
// is empty. For the default it creates the tenant token on first start.
func loadConfig(path, dataDir string) (*config.Config, error) {
	var cfg *config.Config
	if path == "" {
		cfg = config.Default()
	} else {
		var err error
		if cfg, err = config.Load(path); err != nil {
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

// compile validates cfg and compiles its policy, reading the tenants' tokens: as
// rules.Compile did with the whole file before config was its own package, a
// config changed after loading (--data-dir, --proxy) is checked again.
func compile(cfg *config.Config) (*rules.Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return rules.Compile(cfg.Policy(), cfg.Token)
}

// ensureToken creates a random token file (0600) unless one exists.
func ensureToken(path string) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	b := make([]byte, 32)
	if _, err := io.ReadFull(rand.Reader, b); err != nil {
		return err
	}
	return fileutil.WriteFile(path, []byte(base64.RawURLEncoding.EncodeToString(b)+"\n"), 0o600)
}

func runConfigCheck(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("config check", stderr)
	path := fs.String("config", "", "config file to check (default: the embedded default)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	var cfg *config.Config
	var err error
	if *path == "" {
		cfg = config.Default()
		err = cfg.Validate()
	} else {
		cfg, err = config.Load(*path)
	}
	if err != nil {
		return err
	}
	if *path != "" {
		if _, err := compile(cfg); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "config ok: %d tenant(s)\n", len(cfg.Tenants))
	return nil
}
