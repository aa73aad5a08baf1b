package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/sluice-egress/sluice/config"
	"github.com/sluice-egress/sluice/derive"
	"github.com/sluice-egress/sluice/internal/database"
	"github.com/sluice-egress/sluice/internal/explain"
	"github.com/sluice-egress/sluice/rules"
)

const policyUsage = "sluice policy explain|check|presets|propose (see sluice help)"

func runPolicy(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: %s", errUsage, policyUsage)
	}
	switch args[0] {
	case "explain":
		return runPolicyExplain(args[1:], stdout, stderr)
	case "check":
		return runPolicyCheck(args[1:], stdout, stderr)
	case "presets":
		return runPolicyPresets(args[1:], stdout, stderr)
	case "propose":
		return runPolicyPropose(args[1:], stdout, stderr)
	}
	return fmt.Errorf("%w: %s", errUsage, policyUsage)
}

// policyFlags are the flags explain and check share.
type policyFlags struct {
	config, tenant, class, repo, remote, run string
	json                                     bool
}

func (pf *policyFlags) register(fs interface {
	StringVar(*string, string, string, string)
	BoolVar(*bool, string, bool, string)
}) {
	fs.StringVar(&pf.config, "config", "", "config file (default: the embedded default)")
	fs.StringVar(&pf.tenant, "tenant", "", "tenant (required)")
	fs.StringVar(&pf.class, "class", rules.DefaultClass, "launch class")
	fs.StringVar(&pf.repo, "repo", "", "repository directory to derive presets from")
	fs.StringVar(&pf.remote, "remote", "", "the repository's git remote URL")
	fs.BoolVar(&pf.json, "json", false, "print JSON")
	fs.StringVar(&pf.run, "run", "", "a stored run: its class, derived presets and own entries (instead of --class and --repo)")
}

// resolve loads the config (no tokens are read) and resolves the effective policy.
func (pf *policyFlags) resolve() (*rules.EffectivePolicy, *derive.Derivation, error) {
	if pf.tenant == "" && pf.run == "" {
		return nil, nil, fmt.Errorf("%w: --tenant (or --run) is required", errUsage)
	}
	if pf.run != "" && pf.repo != "" {
		return nil, nil, fmt.Errorf("%w: --run or --repo, not both (a run's presets were derived when it was created)", errUsage)
	}
	var cfg *config.Config
	if pf.config == "" {
		cfg = config.Default()
	} else {
		var err error
		if cfg, err = config.Load(pf.config); err != nil {
			return nil, nil, err
		}
	}
	d, err := derive.DeriveDir(pf.repo, pf.remote)
	if err != nil {
		if errors.Is(err, derive.ErrNotDir) {
			return nil, nil, fmt.Errorf("--repo %w", err)
		}
		return nil, nil, err
	}
	in := rules.PolicyInput{Tenant: pf.tenant, Class: pf.class, Derived: d.Policy()}
	if pf.run != "" {
		if in, err = database.RunInput(context.Background(), cfg, pf.run, pf.tenant); err != nil {
			return nil, nil, fmt.Errorf("--run %w", err)
		}
	}
	p, err := database.ResolvePolicy(context.Background(), cfg, in)
	return p, d, err
}

func runPolicyExplain(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("policy explain", stderr)
	var pf policyFlags
	pf.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	p, d, err := pf.resolve()
	if err != nil {
		return err
	}
	if pf.json {
		return writeJSON(stdout, struct {
			*rules.EffectivePolicy
			Derivation *derive.Derivation `json:"derivation,omitempty"`
		}{p, d})
	}
	explain.Policy(stdout, p, d)
	return nil
}

func runPolicyCheck(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("policy check", stderr)
	var pf policyFlags
	pf.register(fs)
	method := fs.String("method", "GET", "request method")
	trace := fs.Bool("trace", false, "show each entry considered and why it matched or not")
	// The URL may come before, between or after the flags.
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return fmt.Errorf("%w: one URL only", errUsage)
	}
	target := strings.Join(pos, "")
	if target == "" {
		return fmt.Errorf("%w: sluice policy check --tenant T [--class C] URL [--method M]", errUsage)
	}
	tg, err := rules.ParseTarget(target)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	p, _, err := pf.resolve()
	if err != nil {
		return err
	}
	res := p.Check(*method, tg)
	if *trace {
		res = p.CheckTraced(*method, tg)
	}
	d := res.Decision
	if pf.json {
		if err := writeJSON(stdout, res); err != nil || d.Action != rules.Deny {
			return err
		}
		return errRefused
	}
	if d.Action == rules.Deny {
		fmt.Fprintf(stdout, "deny %s %s: %s\n", res.Method, res.URL, d.Reason)
		explain.Trace(stdout, res.Trace)
		return errRefused // a script can test the answer: exit 1
	}
	fmt.Fprintf(stdout, "%s %s %s\n  by %s  %s\n  from %s\n", d.Action, res.Method, res.URL, d.Entry.Host, d.Entry.Limits(), res.Origin)
	explain.Trace(stdout, res.Trace)
	return nil
}

func runPolicyPresets(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("policy presets", stderr)
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	ps := rules.Presets()
	if *asJSON {
		return writeJSON(stdout, struct {
			Presets []rules.Preset `json:"presets"`
			Slots   []string       `json:"host_slots"`
		}{ps, rules.PresetSlots()})
	}
	explain.Presets(stdout, ps)
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
