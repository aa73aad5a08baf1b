package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/sluice-egress/sluice/scanner"
)

// runRulesTest runs the rules (defaults, shipped packs and the config's
// rule_packs) against a corpus with a manifest, prints per-rule true and
// false positives and negatives, and fails on any miss or false alarm.
func runRulesTest(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("rules test", stderr)
	corpus := fs.String("corpus", "", "corpus directory with a "+scanner.ManifestFile)
	cfgPath := fs.String("config", "", "config file: its scanning keys and rule_packs")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *corpus == "" {
		return fmt.Errorf("%w: --corpus is required", errUsage)
	}
	cfg, err := scanConfig(*cfgPath, "")
	if err != nil {
		return err
	}
	sc, err := scanner.Build(cfg.ScannerOptions(false))
	if err != nil {
		return err
	}
	rep, err := scanner.RunCorpus(ctx, sc, *corpus)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RULE\tTP\tFP\tFN")
	for _, r := range rep.Rules {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\n", r.Rule, r.TruePositives, r.FalsePositives, r.FalseNegatives)
	}
	tw.Flush()
	for _, f := range rep.Failures {
		fmt.Fprintln(stdout, "FAIL", f)
	}
	fmt.Fprintf(stdout, "%d files, %d failures\n", rep.Files, len(rep.Failures))
	if len(rep.Failures) > 0 {
		return fmt.Errorf("rules test: %d regressions against %s", len(rep.Failures), *corpus)
	}
	return nil
}
