package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/sluice-egress/sluice/config"
	"github.com/sluice-egress/sluice/internal/database"
	"github.com/sluice-egress/sluice/internal/runstore"
	"github.com/sluice-egress/sluice/runs"
	"github.com/sluice-egress/sluice/store"
)

// runPolicyPropose drafts a least-privilege policy from what the tenant's
// runs did (the observation log and the refusals in the store) and prints it
// as a config `sluice config check` accepts.
func runPolicyPropose(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("policy propose", stderr)
	cfgPath := fs.String("config", "", "config file (default: the embedded default)")
	dataDir := fs.String("data-dir", "", "data directory (overrides data_dir)")
	tenant := fs.String("tenant", "", "tenant (required)")
	class := fs.String("class", "", "launch class (default: every class seen)")
	sinceFlag := fs.String("since", "7d", "how far back to look, such as 7d, 36h or 2w")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *tenant == "" {
		return fmt.Errorf("%w: --tenant is required", errUsage)
	}
	since, err := config.ParsePeriod(*sinceFlag)
	if err != nil {
		return fmt.Errorf("%w: --since: %v", errUsage, err)
	}
	cfg := config.Default()
	if *cfgPath != "" {
		if cfg, err = config.Load(*cfgPath); err != nil {
			return err
		}
	}
	if *dataDir != "" {
		cfg.DataDir = *dataDir
	}
	t := cfg.Tenants[*tenant]
	if t == nil {
		return fmt.Errorf("%w: no tenant %q in the config", errUsage, *tenant)
	}
	ctx := context.Background()
	st, err := database.Existing(ctx, cfg)
	if err != nil {
		return err
	}
	if st == nil {
		return fmt.Errorf("no store at %s: nothing observed yet (--data-dir?)", filepath.Join(cfg.DataPath(), store.FileName))
	}
	defer st.Close()
	from := time.Now().Add(-time.Duration(since))
	obs, err := runstore.Observed(ctx, st, *tenant, *class, from)
	if err != nil {
		return err
	}
	p := runs.Propose(runs.ProposeInput{Tenant: *tenant, Class: *class, Observed: obs})
	opts := runs.YAMLOptions{TokenEnv: t.TokenEnv, Header: runs.DraftHeader(*tenant, *class, *sinceFlag, len(obs), from)}
	if t.TokenEnv == "" {
		if opts.TokenFile, err = filepath.Abs(cfg.TokenPath(t)); err != nil {
			opts.TokenFile = cfg.TokenPath(t)
		}
	}
	_, err = stdout.Write(p.YAML(opts))
	return err
}
