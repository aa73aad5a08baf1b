package main

import (
	"fmt"
	"io"

	"github.com/sluice-egress/sluice/config"
)

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
		if _, err := cfg.Compile(); err != nil {
			return err
		}
		if err := cfg.CheckUpstreamHosts(); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "config ok: %d tenant(s)\n", len(cfg.Tenants))
	return nil
}
