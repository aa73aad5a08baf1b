package rules

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sluice-egress/sluice/rules/match"
)

// Origin kinds: where an effective entry came from.
const (
	OriginConfig  = "config"  // the tenant's class in the config file (directly or by preset)
	OriginDerived = "derived" // a preset the run's repository selected
	OriginGrant   = "grant"   // an approved access request
	OriginRun     = "run"     // the run's own extras
)

// Origin is an entry's provenance, shown by `sluice policy explain` and kept on
// Decision.Entry.
type Origin struct {
	// Kind is one of the Origin constants; "" for an entry built in code.
	Kind string `json:"kind,omitempty"`
	// File and Line locate a config entry (or the config line that named its preset).
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
	// Preset is the preset the entry expanded from; zero when none.
	Preset PresetRef `json:"preset,omitzero"`
	// From lists what selected a derived preset: manifest paths relative to the
	// repository, or "git remote".
	From []string `json:"from,omitempty"`
	// Grant is the access request's id for OriginGrant.
	Grant string `json:"grant,omitempty"`
	// Run is the run's id for OriginRun and OriginGrant entries of a run.
	Run string `json:"run,omitempty"`
}

// String says where the entry came from in one line, e.g. "sluice.yaml:12",
// "preset npm@1 via sluice.yaml:14", "preset pypi@1 derived from requirements.txt",
// "grant ar-17", "run r-1 extra".
func (o Origin) String() string {
	var b strings.Builder
	if o.Preset.Name != "" {
		b.WriteString("preset " + o.Preset.String())
	}
	sep := func(s string) {
		if b.Len() > 0 {
			b.WriteString(" ")
		}
		b.WriteString(s)
	}
	switch o.Kind {
	case OriginConfig:
		loc := o.File
		if loc == "" {
			loc = "config"
		}
		if o.Line > 0 {
			loc = fmt.Sprintf("%s:%d", loc, o.Line)
		}
		if o.Preset.Name != "" {
			sep("via " + loc)
		} else {
			sep(loc)
		}
	case OriginDerived:
		sep("derived from " + strings.Join(o.From, ", "))
	case OriginGrant:
		sep("grant " + o.Grant)
	case OriginRun:
		sep("run " + o.Run + " extra")
	default:
		if b.Len() == 0 {
			return "unknown"
		}
	}
	return b.String()
}

// Grant is an approved access request the caller (the store) supplies for a run.
type Grant struct {
	// ID identifies the request, for provenance.
	ID string
	// Tenant the grant belongs to; it must be the run's tenant.
	Tenant string
	// Class limits the grant to one launch class; "" for all of the tenant's classes.
	Class string
	// Entry is what was granted: a host entry (no preset, no allow_addresses).
	Entry Entry
	// Passthrough grants a blind tunnel instead of an inspected one.
	Passthrough bool
	// Expires ends the grant; zero: no end.
	Expires time.Time
	// Run limits the grant to one run of the tenant; "" for all of them.
	Run string
}

// PolicyInput is what a run's effective policy is made of.
type PolicyInput struct {
	// Policy is the checked policy (see Policy.Check).
	Policy *Policy
	// Tenant and Class name the run's class; Class "" means DefaultClass.
	Tenant, Class string
	// Run is the run's id ("" for a dry run of the class).
	Run string
	// Derived is what the run's repository selected (package derive computes it); nil
	// for none.
	Derived *Derived
	// Grants are approved access requests for the tenant; expired ones and those of
	// other classes are left out.
	Grants []Grant
	// Extras are the run's own entries; each must fall within the class's run_extras.
	Extras []Entry
	// Now is the time grants expire against; zero: time.Now().
	Now time.Time
}

// PresetUse reports one preset the effective policy considered.
type PresetUse struct {
	Preset PresetRef `json:"preset"`
	// Origin is what selected it (config line or derivation).
	Origin Origin `json:"origin"`
	// Entries is how many entries it contributed.
	Entries int `json:"entries"`
	// Note says why it contributed less than it could: unset host slots, not permitted
	// by derive.presets, already in the config. "" when it applied in full.
	Note string `json:"note,omitempty"`
}

// EffectivePolicy is a run's (or a class's) resolved policy: every entry with its origin.
type EffectivePolicy struct {
	Tenant string `json:"tenant"`
	Class  string `json:"class"`
	Run    string `json:"run,omitempty"`
	// TenantToken says whether the tenant token may select the class (its
	// token_classes); run tokens reach it either way.
	TenantToken bool `json:"tenant_token"`
	// Allow and Passthrough are the effective entries, config first, then derived
	// presets, grants and extras.
	Allow       []Entry `json:"allow"`
	Passthrough []Entry `json:"passthrough"`
	// Presets lists each preset considered and what it gave.
	Presets []PresetUse `json:"presets"`
	// Suggestions are registries and hosts the repository names that the policy does
	// not allow: values a caller may turn into access requests.
	Suggestions []Suggestion `json:"suggestions"`

	once     sync.Once
	compiled *class
}

// ResolvePolicy computes the effective policy of a tenant's class for a run: the class's
// config entries ∪ the derived presets that the class's derive.presets permits ∪ the
// grants ∪ the run's extras that its run_extras permits. Every entry is validated as
// strictly as the config; a grant or extra that fails is an error naming it.
func ResolvePolicy(in PolicyInput) (*EffectivePolicy, error) {
	pol := in.Policy
	if pol == nil {
		return nil, errors.New("rules: resolve policy: no policy")
	}
	className := in.Class
	if className == "" {
		className = DefaultClass
	}
	t := pol.Tenants[in.Tenant]
	if t == nil {
		return nil, fmt.Errorf("rules: unknown tenant %q", in.Tenant)
	}
	cl := t.Classes[className]
	if cl == nil {
		return nil, fmt.Errorf("rules: tenant %s has no class %q", in.Tenant, className)
	}
	now := in.Now
	if now.IsZero() {
		now = time.Now()
	}
	p := &EffectivePolicy{Tenant: in.Tenant, Class: className, Run: in.Run, TenantToken: t.tokenSelects(className)}
	inConfig := map[string]bool{}
	p.Allow = p.configEntries(pol, cl.Allow, inConfig)
	p.Passthrough = p.configEntries(pol, cl.Passthrough, inConfig)

	var errs []error
	if d := in.Derived; d != nil {
		for _, dp := range d.Presets {
			pr := presets[dp.Name]
			if pr == nil {
				errs = append(errs, fmt.Errorf("rules: derived preset %q is unknown", dp.Name))
				continue
			}
			use := PresetUse{Preset: PresetRef{pr.Name, pr.Version}, Origin: Origin{Kind: OriginDerived, From: slices.Clone(dp.From)}}
			switch {
			case !slices.Contains(cl.Derive.Presets, dp.Name):
				use.Note = fmt.Sprintf("not permitted: not in derive.presets of tenant %s class %s", in.Tenant, className)
			case inConfig[dp.Name] && !(d.Repo != nil && d.Repo.Preset == dp.Name):
				use.Note = "already in the class's config"
			default:
				repoPath := ""
				if d.Repo != nil && d.Repo.Preset == dp.Name {
					repoPath = d.Repo.Path
				}
				entries, unset := expandPreset(pol, pr, repoPath)
				for _, en := range entries {
					en.Origin = use.Origin
					en.Origin.Preset = use.Preset
					en.Origin.Run = in.Run
					p.Allow = append(p.Allow, en)
				}
				use.Entries = len(entries)
				use.Note = unsetNote(unset)
			}
			p.Presets = append(p.Presets, use)
		}
	}
	for _, g := range in.Grants {
		if g.Tenant != in.Tenant {
			errs = append(errs, fmt.Errorf("rules: grant %s is for tenant %q, not %q", g.ID, g.Tenant, in.Tenant))
			continue
		}
		if (g.Class != "" && g.Class != className) || (!g.Expires.IsZero() && !now.Before(g.Expires)) {
			continue
		}
		if err := checkOwnEntry(fmt.Sprintf("grant %s", g.ID), g.Entry, g.Passthrough); err != nil {
			errs = append(errs, err)
			continue
		}
		en := cloneEntry(g.Entry)
		en.Origin = Origin{Kind: OriginGrant, Grant: g.ID, Run: in.Run}
		if g.Passthrough {
			p.Passthrough = append(p.Passthrough, en)
		} else {
			p.Allow = append(p.Allow, en)
		}
	}
	for i, x := range in.Extras {
		name := fmt.Sprintf("run %s extra %d (%s)", in.Run, i, x.Host)
		if err := checkOwnEntry(name, x, false); err != nil {
			errs = append(errs, err)
			continue
		}
		if !withinPatterns(x.Host, cl.RunExtras) {
			errs = append(errs, fmt.Errorf("rules: %s: not within run_extras of tenant %s class %s", name, in.Tenant, className))
			continue
		}
		en := cloneEntry(x)
		en.Origin = Origin{Kind: OriginRun, Run: in.Run}
		p.Allow = append(p.Allow, en)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if d := in.Derived; d != nil {
		for _, s := range d.Suggestions {
			if p.Decide(Query{Host: s.Host, Port: s.Port, Stage: StageConnect}).Action == Deny {
				p.Suggestions = append(p.Suggestions, s)
			}
		}
	}
	return p, nil
}

// configEntries expands a class's config list, presets included, recording origins.
func (p *EffectivePolicy) configEntries(pol *Policy, list []Entry, inConfig map[string]bool) []Entry {
	out, uses := expandConfigEntries(pol, list)
	for _, u := range uses {
		inConfig[u.Preset.Name] = true
	}
	p.Presets = append(p.Presets, uses...)
	return out
}

// expandConfigEntries expands a class's config list, presets included, each entry with
// its Origin; it also reports each preset used.
func expandConfigEntries(pol *Policy, list []Entry) ([]Entry, []PresetUse) {
	var out []Entry
	var uses []PresetUse
	for _, en := range list {
		o := Origin{Kind: OriginConfig, File: pol.File, Line: en.Line}
		if en.Preset == "" {
			c := cloneEntry(en)
			c.Origin = o
			out = append(out, c)
			continue
		}
		pr := presets[en.Preset]
		if pr == nil {
			continue // validated
		}
		o.Preset = PresetRef{pr.Name, pr.Version}
		entries, unset := expandPreset(pol, pr, "")
		for _, pe := range entries {
			pe.Line = en.Line
			pe.Origin = o
			out = append(out, pe)
		}
		uses = append(uses, PresetUse{Preset: o.Preset, Origin: Origin{Kind: OriginConfig, File: pol.File, Line: en.Line}, Entries: len(entries), Note: unsetNote(unset)})
	}
	return out, uses
}

func unsetNote(unset []string) string {
	if len(unset) == 0 {
		return ""
	}
	slices.Sort(unset)
	return fmt.Sprintf("presets.hosts.%s unset in the config: contributes nothing", strings.Join(slices.Compact(unset), ", presets.hosts."))
}

// checkOwnEntry validates an entry that does not come from the config file (a grant or
// a run's extra) as strictly as a config entry, and refuses what only the config may
// say: presets and allow_addresses.
func checkOwnEntry(name string, e Entry, passthrough bool) error {
	if e.Preset != "" {
		return fmt.Errorf("rules: %s: names preset %q; only the config and derivation select presets", name, e.Preset)
	}
	if len(e.AllowAddresses) > 0 {
		return fmt.Errorf("rules: %s: allow_addresses may only be set in the config file", name)
	}
	var ps problems
	ps.entry(name, &e, passthrough)
	if len(ps) > 0 {
		return fmt.Errorf("rules: %w", ps.err())
	}
	return nil
}

// withinPatterns reports whether host pattern h is covered by one of the patterns: an
// exact host by an equal one or a wildcard that matches it, a wildcard by an equal or
// wider wildcard.
func withinPatterns(h string, patterns []string) bool {
	hp, err := match.ParseHostPattern(h)
	if err != nil {
		return false
	}
	for _, ps := range patterns {
		p, err := match.ParseHostPattern(ps)
		if err != nil {
			continue
		}
		if p.Covers(hp) {
			return true
		}
	}
	return false
}

func cloneEntry(en Entry) Entry {
	en.Ports = slices.Clone(en.Ports)
	en.Methods = slices.Clone(en.Methods)
	UpperMethods(en.Methods)
	en.Paths = slices.Clone(en.Paths)
	en.AllowAddresses = slices.Clone(en.AllowAddresses)
	en.Origin.From = slices.Clone(en.Origin.From)
	return en
}

// RunEntries returns the entries that the class's config does not hold (derived,
// granted and extra), for AddRun.
func (p *EffectivePolicy) RunEntries() (allow, passthrough []Entry) {
	keep := func(list []Entry) []Entry {
		var out []Entry
		for _, en := range list {
			if en.Origin.Kind != OriginConfig {
				out = append(out, cloneEntry(en))
			}
		}
		return out
	}
	return keep(p.Allow), keep(p.Passthrough)
}

// Decide decides q against this policy alone (q.Identity is ignored), as the engine
// would for the run: for `sluice policy check` and tests.
func (p *EffectivePolicy) Decide(q Query) Decision {
	p.once.Do(func() {
		p.compiled = &class{allow: compileRules(p.Allow), passthrough: compileRules(p.Passthrough)}
	})
	d := Decision{Tenant: p.Tenant}
	return decideIn(d, q, p.compiled, nil)
}

// compileRules compiles validated, expanded entries.
func compileRules(entries []Entry) []*rule {
	out := make([]*rule, 0, len(entries))
	for _, en := range entries {
		out = append(out, compileRule(en))
	}
	return out
}
