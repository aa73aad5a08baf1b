package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/sluice-egress/sluice/config"
	"github.com/sluice-egress/sluice/scanner"
)

// runCanaryIssue mints decoy credentials for a tenant (and run) and prints
// them once, as env lines to plant in a sandbox; only their keyed
// fingerprints are stored, under the data directory, where the gateway
// looks for them.
func runCanaryIssue(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("canary issue", stderr)
	cfgPath := fs.String("config", "", "config file (default: the embedded default)")
	dataDir := fs.String("data-dir", "", "data directory (overrides data_dir)")
	tenant := fs.String("tenant", "", "tenant the canaries are planted for")
	run := fs.String("run", "", "run id (optional)")
	asJSON := fs.Bool("json", false, "print the canaries as JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *tenant == "" {
		return fmt.Errorf("%w: --tenant is required", errUsage)
	}
	cfg, err := config.Open(*cfgPath, *dataDir)
	if err != nil {
		return err
	}
	if _, ok := cfg.Tenants[*tenant]; !ok {
		return fmt.Errorf("unknown tenant %q", *tenant)
	}
	cs, err := scanner.IssueCanaries(cfg.DataPath(), *tenant, *run)
	if err != nil {
		return err
	}
	if *asJSON {
		b, _ := json.MarshalIndent(cs, "", "  ")
		fmt.Fprintln(stdout, string(b))
		return nil
	}
	fmt.Fprintf(stdout, "# canaries for tenant %s%s: plant them in the sandbox; any use in egress is blocked and recorded\n",
		*tenant, map[bool]string{true: ", run " + *run, false: ""}[*run != ""])
	for _, c := range cs {
		fmt.Fprintf(stdout, "%s=%s  # %s\n", c.EnvName(), c.Value, c.ID)
	}
	return nil
}
