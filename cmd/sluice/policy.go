package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	iofs "io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-egress/sluice/config"
	"github.com/sluice-egress/sluice/derive"
	"github.com/sluice-egress/sluice/rules"
	"github.com/sluice-egress/sluice/runs"
	"github.com/sluice-egress/sluice/store"
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
	config, tenant, class, repo, remote string
	json                                bool
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
}

// resolve loads the config (no tokens are read) and resolves the effective policy.
func (pf *policyFlags) resolve() (*rules.EffectivePolicy, *derive.Derivation, error) {
	if pf.tenant == "" {
		return nil, nil, fmt.Errorf("%w: --tenant is required", errUsage)
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
	var d *derive.Derivation
	if pf.repo != "" || pf.remote != "" {
		var fsys iofs.FS
		if pf.repo != "" {
			if fi, err := os.Stat(pf.repo); err != nil || !fi.IsDir() {
				return nil, nil, fmt.Errorf("--repo %s: not a directory", pf.repo)
			}
			fsys = os.DirFS(pf.repo)
		}
		var err error
		if d, err = derive.Derive(fsys, pf.remote); err != nil {
			return nil, nil, err
		}
	}
	grants, err := storedGrants(cfg, pf.tenant)
	if err != nil {
		return nil, nil, err
	}
	p, err := rules.ResolvePolicy(rules.PolicyInput{Policy: cfg.Policy(), Tenant: pf.tenant, Class: pf.class, Derived: d.Policy(),
		Grants: grants, Now: time.Now()})
	return p, d, err
}

// storedGrants reads the tenant's approved, unexpired access requests from
// the data directory's store, when there is one: they are part of the
// effective policy. It never creates a store.
func storedGrants(cfg *config.Config, tenant string) ([]rules.Grant, error) {
	path := filepath.Join(cfg.DataPath(), store.FileName)
	if _, err := os.Stat(path); err != nil {
		return nil, nil
	}
	st, err := store.Open(context.Background(), path)
	if err != nil {
		return nil, fmt.Errorf("read grants: %w", err)
	}
	defer st.Close()
	active, err := st.ActiveGrants(context.Background(), time.Now())
	if err != nil {
		return nil, fmt.Errorf("read grants: %w", err)
	}
	var out []rules.Grant
	for _, x := range active {
		if x.Tenant == tenant {
			out = append(out, runs.GrantOf(runs.AccessRequest(x)))
		}
	}
	return out, nil
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
			fmt.Fprintf(stdout, "  %-40s %s  [%s]\n", en.Host, entryLimits(en), en.Origin)
		}
	}
	if len(p.Presets) > 0 {
		fmt.Fprintln(stdout, "\npresets:")
		for _, u := range p.Presets {
			note := ""
			if u.Note != "" {
				note = ": " + u.Note
			}
			fmt.Fprintf(stdout, "  %-14s %s, %d entries%s\n", u.Preset, originWhere(u.Origin), u.Entries, note)
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

// originWhere says what selected a preset.
func originWhere(o rules.Origin) string {
	o.Preset = rules.PresetRef{}
	return o.String()
}

// entryLimits describes an entry's ports, methods, paths and flags.
func entryLimits(en rules.Entry) string {
	var parts []string
	ports := "443,80"
	if len(en.Ports) > 0 {
		ps := make([]string, len(en.Ports))
		for i, p := range en.Ports {
			ps[i] = strconv.Itoa(p)
		}
		ports = strings.Join(ps, ",")
	}
	parts = append(parts, "ports "+ports)
	methods := "any"
	if len(en.Methods) > 0 {
		methods = strings.Join(en.Methods, ",")
	}
	parts = append(parts, "methods "+methods)
	if len(en.Paths) > 0 {
		parts = append(parts, "paths "+strings.Join(en.Paths, ","))
	}
	if en.WebSocket {
		parts = append(parts, "websocket")
	}
	if len(en.AllowAddresses) > 0 {
		parts = append(parts, "allow_addresses "+strings.Join(en.AllowAddresses, ","))
	}
	return strings.Join(parts, "  ")
}

// checkResult is what `policy check --json` prints.
type checkResult struct {
	URL     string       `json:"url"`
	Method  string       `json:"method"`
	Stage   string       `json:"stage"`
	Action  string       `json:"action"`
	Reason  string       `json:"reason,omitempty"`
	Entry   *rules.Entry `json:"entry,omitempty"`
	Origin  string       `json:"origin,omitempty"`
	Allowed bool         `json:"allowed"`
	// Trace is the chain that decided it (--trace).
	Trace []traceLine `json:"trace,omitempty"`
}

func runPolicyCheck(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("policy check", stderr)
	var pf policyFlags
	pf.register(fs)
	method := fs.String("method", "GET", "request method")
	trace := fs.Bool("trace", false, "show each entry considered and why it matched or not")
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
	u, err := url.Parse(target)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return fmt.Errorf("%w: %q: want an http:// or https:// URL", errUsage, target)
	}
	port := 443
	if u.Scheme == "http" {
		port = 80
	}
	host := u.Hostname()
	if ps := u.Port(); ps != "" {
		if port, err = strconv.Atoi(ps); err != nil || port < 1 || port > 65535 {
			return fmt.Errorf("%w: bad port in %q", errUsage, target)
		}
	}
	p, _, err := pf.resolve()
	if err != nil {
		return err
	}
	res := checkResult{URL: (&url.URL{Scheme: u.Scheme, Host: net.JoinHostPort(host, strconv.Itoa(port)), Path: u.Path}).String(), Method: strings.ToUpper(*method)}
	var d rules.Decision
	if u.Scheme == "https" {
		res.Stage = rules.StageConnect.String()
		q := rules.Query{Host: host, Port: port, Stage: rules.StageConnect}
		d = p.Decide(q)
		res.addTrace(*trace, p.Trace(q))
	}
	if u.Scheme == "http" || d.Action == rules.Inspect {
		res.Stage = rules.StageRequest.String()
		q := rules.Query{Host: host, Port: port, Method: res.Method, Path: u.EscapedPath(), Stage: rules.StageRequest}
		d = p.Decide(q)
		res.addTrace(*trace, p.Trace(q))
	}
	res.Action, res.Reason, res.Entry = d.Action.String(), d.Reason, d.Entry
	res.Allowed = d.Action != rules.Deny
	if d.Entry != nil {
		res.Origin = d.Entry.Origin.String()
	}
	if pf.json {
		return writeJSON(stdout, res)
	}
	if d.Action == rules.Deny {
		fmt.Fprintf(stdout, "deny %s %s: %s\n", res.Method, res.URL, d.Reason)
	} else {
		fmt.Fprintf(stdout, "%s %s %s\n  by %s  %s\n  from %s\n", d.Action, res.Method, res.URL, d.Entry.Host, entryLimits(*d.Entry), res.Origin)
	}
	res.printTrace(stdout)
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
			limits := entryLimits(rules.Entry{Ports: pe.Ports, Methods: pe.Methods, Paths: pe.Paths, WebSocket: pe.WebSocket})
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
