package main

import (
	"fmt"
	"io"

	"github.com/sluice-egress/sluice/config"
	"github.com/sluice-egress/sluice/rules"
)

// compile validates cfg and compiles its policy, reading the tenants' tokens: as
// rules.Compile did with the whole file before config was its own package, a
// config changed after loading (--data-dir, --proxy) is checked again.
func compile(cfg *config.Config) (*rules.Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return rules.Compile(cfg.Policy(), cfg.Token)
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
