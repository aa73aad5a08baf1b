package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sluice-egress/sluice/config"
	"github.com/sluice-egress/sluice/derive"
	"github.com/sluice-egress/sluice/rules"
)

const policyUsage = "sluice policy explain|check|presets (see sluice help)"

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
		if in, err = runInput(cfg, pf.run, pf.tenant); err != nil {
			return nil, nil, err
		}
	}
	grants, err := storedGrants(cfg, in.Tenant)
	if err != nil {
		return nil, nil, err
	}
	in.Policy, in.Grants, in.Now = cfg.Policy(), grants, time.Now()
	p, err := rules.ResolvePolicy(in)
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
	fmt.Fprintf(stdout, "tenant %s, class %s\n", p.Tenant, p.Class)
	for _, role := range []struct {
		name    string
		entries []rules.Entry
	}{{"allow (inspected, checked per request)", p.Allow}, {"passthrough (blind tunnel, host and port only)", p.Passthrough}} {
		fmt.Fprintf(stdout, "\n%s:\n", role.name)
		if len(role.entries) == 0 {
			fmt.Fprintln(stdout, "  (none)")
		}
		for _, en := range role.entries {
			fmt.Fprintf(stdout, "  %-40s %s  [%s]\n", en.Host, en.Limits(), en.Origin)
		}
	}
	if len(p.Presets) > 0 {
		fmt.Fprintln(stdout, "\npresets:")
		for _, u := range p.Presets {
			note := ""
			if u.Note != "" {
				note = ": " + u.Note
			}
			fmt.Fprintf(stdout, "  %-14s %s, %d entries%s\n", u.Preset, u.Origin.Where(), u.Entries, note)
		}
	}
	if d != nil && d.Repo != nil {
		fmt.Fprintf(stdout, "\nrepository: %s/%s (preset %s)\n", d.Repo.Host, d.Repo.Path, d.Repo.Preset)
	}
	if len(p.Suggestions) > 0 {
		fmt.Fprintln(stdout, "\nsuggestions (named by the repository, not allowed; request access to add them):")
		for _, s := range p.Suggestions {
			fmt.Fprintf(stdout, "  %s:%d  %s  %s (%s)\n", s.Host, s.Port, s.URL, s.Why, s.Source)
		}
	}
	if d != nil && len(d.Skipped) > 0 {
		fmt.Fprintln(stdout, "\nnot read:")
		for _, s := range d.Skipped {
			fmt.Fprintf(stdout, "  %s\n", s)
		}
	}
	return nil
}

func runPolicyCheck(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("policy check", stderr)
	var pf policyFlags
	pf.register(fs)
	method := fs.String("method", "GET", "request method")
	// The URL may come before, between or after the flags.
	var target string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return err
			}
			return fmt.Errorf("%w: %v", errUsage, err)
		}
		if fs.NArg() == 0 {
			break
		}
		if target != "" {
			return fmt.Errorf("%w: one URL only", errUsage)
		}
		target, args = fs.Arg(0), fs.Args()[1:]
	}
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
	d := res.Decision
	if pf.json {
		if err := writeJSON(stdout, res); err != nil || d.Action != rules.Deny {
			return err
		}
		return errRefused
	}
	if d.Action == rules.Deny {
		fmt.Fprintf(stdout, "deny %s %s: %s\n", res.Method, res.URL, d.Reason)
		return errRefused // a script can test the answer: exit 1
	}
	fmt.Fprintf(stdout, "%s %s %s\n  by %s  %s\n  from %s\n", d.Action, res.Method, res.URL, d.Entry.Host, d.Entry.Limits(), res.Origin)
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
	for _, p := range ps {
		fmt.Fprintf(stdout, "%s@%d  %s\n", p.Name, p.Version, p.Description)
		for _, pe := range p.Entries {
			host := pe.Host
			if pe.HostFrom != "" {
				host = "hosts from presets.hosts." + pe.HostFrom
			}
			limits := rules.Entry{Ports: pe.Ports, Methods: pe.Methods, Paths: pe.Paths, WebSocket: pe.WebSocket}.Limits()
			if pe.RepoPaths {
				limits += "  paths: the run's repository"
			}
			fmt.Fprintf(stdout, "    %-40s %s\n", host, limits)
		}
	}
	fmt.Fprintf(stdout, "\nhost slots (set under presets.hosts in the config): %s\n", strings.Join(rules.PresetSlots(), ", "))
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
