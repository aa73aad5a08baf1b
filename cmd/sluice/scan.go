package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/sluice-egress/sluice/config"
	"github.com/sluice-egress/sluice/internal/explain"
	"github.com/sluice-egress/sluice/rules"
	"github.com/sluice-egress/sluice/scanner"
)

// errFound makes `sluice scan` exit 1 when something was found.
var errFound = errors.New("findings")

// scanConfig loads the config for the offline commands; without a file or
// data directory it is the embedded default, and nothing is created on disk.
func scanConfig(path, dataDir string) (*config.Config, error) {
	if path == "" && dataDir == "" {
		return config.Default(), nil
	}
	return config.Open(path, dataDir)
}

// runScan scans files, directories or stdin with the gateway's engine. It
// exits 0 when nothing was found, 1 when something was, 2 on usage errors.
func runScan(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("scan", stderr)
	asJSON := fs.Bool("json", false, "print findings as JSON lines")
	cfgPath := fs.String("config", "", "config file: its scanning keys, rule packs and data directory (key, canaries)")
	dataDir := fs.String("data-dir", "", "data directory (overrides data_dir)")
	maxBytes := fs.Int64("max-bytes", 64<<20, "largest file scanned")
	tenant := fs.String("tenant", "", "tenant whose policy decides which links lead outside (default: the config's only tenant)")
	class := fs.String("class", rules.DefaultClass, "launch class, with --tenant")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	targets := fs.Args()
	if len(targets) == 0 {
		targets = []string{"-"}
	}
	cfg, err := scanConfig(*cfgPath, *dataDir)
	if err != nil {
		return err
	}
	sc, err := scanner.Build(cfg.ScannerOptions(*cfgPath != "" || *dataDir != ""))
	if err != nil {
		return err
	}
	sc.MaxBodyBytes = *maxBytes
	// A file is not a request: give each the time a large file needs.
	sc.Timeout = 5 * time.Minute
	report := func(name string, f scanner.Finding) { explain.Finding(stdout, name, f, *asJSON) }
	allowed, err := cfg.LinkAllowed(*tenant, *class)
	if errors.Is(err, config.ErrWhichTenant) {
		fmt.Fprintln(stderr, "sluice scan: links to other hosts not checked: pass --tenant (the config has several tenants)")
	} else if err != nil {
		return err
	}
	found, err := scanner.FileScan{MaxBytes: *maxBytes, Stdin: stdin, Found: report, Allowed: allowed,
		Skipped: func(name string) { fmt.Fprintf(stderr, "sluice scan: %s: larger than --max-bytes, skipped\n", name) },
	}.Run(ctx, sc, targets)
	if err != nil {
		return err
	}
	if found > 0 {
		return fmt.Errorf("%w: %d", errFound, found)
	}
	return nil
}
