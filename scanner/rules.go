package scanner

import (
	"bytes"
	"fmt"
	"io/fs"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/rs/zerolog"
	"github.com/spf13/viper"
	"github.com/zricethezav/gitleaks/v8/config"
	"github.com/zricethezav/gitleaks/v8/logging"
	"github.com/zricethezav/gitleaks/v8/regexp"

	"github.com/sluice-egress/sluice/rules/packs"
)

// Pack is one rule pack in gitleaks' TOML format. Its rules are layered over
// gitleaks' default rules: a rule with a new id is added, a rule with an
// existing id replaces it whole, [extend] disabledRules removes rules and
// [[allowlists]] (with or without targetRules) are added. A [sluice.actions]
// table (rule id = "block" | "redact" | "alert") sets rules' default actions.
type Pack struct {
	// Name is where the pack came from, for errors ("sluice.toml", a path).
	Name string
	// Data is the TOML text.
	Data []byte
}

// ShippedPacks returns the packs under rules/packs, in name order.
func ShippedPacks() ([]Pack, error) {
	names, err := fs.Glob(packs.FS, "*.toml")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	out := make([]Pack, 0, len(names))
	for _, n := range names {
		b, err := packs.FS.ReadFile(n)
		if err != nil {
			return nil, fmt.Errorf("scanner: shipped pack %s: %w", n, err)
		}
		out = append(out, Pack{Name: "rules/packs/" + n, Data: b})
	}
	return out, nil
}

// Rules is a compiled rule set: gitleaks' defaults plus packs. It is
// immutable and safe for concurrent use.
type Rules struct {
	cfg     config.Config // as gitleaks would run it (the differential test does)
	eng     *engine
	actions map[string]Action // default action by rule id, from packs
	ids     []string
}

// IDs returns the rule ids, sorted.
func (r *Rules) IDs() []string { return slices.Clone(r.ids) }

// loadMu serialises config loading: gitleaks' config code reads and writes
// package globals (viper's global instance, an extend depth counter).
var loadMu sync.Mutex

// LoadRules compiles gitleaks' default rules with the shipped packs and then
// extra, in that order. Build it once at start-up: loading is slow and not
// concurrent; scanning with the result is.
func LoadRules(extra ...Pack) (*Rules, error) {
	shipped, err := ShippedPacks()
	if err != nil {
		return nil, err
	}
	return loadRules(append(shipped, extra...))
}

func loadRules(list []Pack) (*Rules, error) {
	loadMu.Lock()
	defer loadMu.Unlock()
	// gitleaks logs through a global zerolog logger: keep it quiet, findings
	// are reported by us and its messages can quote matched text.
	logging.Logger = zerolog.Nop()

	base, _, err := translate("gitleaks default config", []byte(config.DefaultConfig))
	if err != nil {
		return nil, err
	}
	actions := map[string]Action{}
	for _, p := range list {
		pc, pv, err := translate(p.Name, p.Data)
		if err != nil {
			return nil, err
		}
		for _, id := range pv.Extend.DisabledRules {
			delete(base.Rules, id)
		}
		for id, r := range pc.Rules {
			base.Rules[id] = r
		}
		base.Allowlists = append(base.Allowlists, pc.Allowlists...)
		for id, als := range pv.targeted {
			r, ok := base.Rules[id]
			if !ok {
				return nil, fmt.Errorf("scanner: pack %s: [[allowlists]] targets unknown rule %q", p.Name, id)
			}
			r.Allowlists = append(r.Allowlists, als...)
			base.Rules[id] = r
		}
		for id, a := range pv.actions {
			act, err := ParseAction(a)
			if err != nil || act == Pass {
				return nil, fmt.Errorf("scanner: pack %s: [sluice.actions] %s: %q is not block, redact or alert", p.Name, id, a)
			}
			actions[id] = act
		}
	}
	for id := range actions {
		if _, ok := base.Rules[id]; !ok {
			return nil, fmt.Errorf("scanner: [sluice.actions] names unknown rule %q", id)
		}
	}
	base.Keywords = map[string]struct{}{}
	base.OrderedRules = base.OrderedRules[:0]
	for id, r := range base.Rules {
		for _, k := range r.Keywords {
			base.Keywords[strings.ToLower(k)] = struct{}{}
		}
		base.OrderedRules = append(base.OrderedRules, id)
	}
	sort.Strings(base.OrderedRules)
	run := base
	if run.Rules, err = tightenRules(findExamples(base.Rules)); err != nil {
		return nil, err
	}
	if run.Allowlists, err = tightenAllowlists(base.Allowlists); err != nil {
		return nil, err
	}
	eng, err := newEngine(run)
	if err != nil {
		return nil, err
	}
	return &Rules{cfg: base, eng: eng, actions: actions, ids: slices.Clone(base.OrderedRules)}, nil
}

// packExtras is what a pack carries besides gitleaks' own config.
type packExtras struct {
	Extend   config.Extend
	targeted map[string][]*config.Allowlist
	actions  map[string]string
}

// translate parses one TOML document with a private viper instance and
// turns it into a gitleaks config without letting gitleaks extend it.
func translate(name string, data []byte) (config.Config, packExtras, error) {
	v := viper.New()
	v.SetConfigType("toml")
	if err := v.ReadConfig(bytes.NewReader(data)); err != nil {
		return config.Config{}, packExtras{}, fmt.Errorf("scanner: pack %s: %w", name, err)
	}
	var vc config.ViperConfig
	if err := v.Unmarshal(&vc); err != nil {
		return config.Config{}, packExtras{}, fmt.Errorf("scanner: pack %s: %w", name, err)
	}
	ex := packExtras{Extend: vc.Extend, targeted: map[string][]*config.Allowlist{}, actions: v.GetStringMapString("sluice.actions")}
	vc.Extend = config.Extend{}
	// Allowlists aimed at rules of another layer cannot be resolved by
	// Translate: compile them alone as global ones and attach them ourselves.
	var global, targeted = vc.Allowlists[:0:0], vc.Allowlists[:0:0]
	for _, a := range vc.Allowlists {
		if len(a.TargetRules) > 0 {
			targeted = append(targeted, a)
		} else {
			global = append(global, a)
		}
	}
	if len(targeted) > 0 {
		tmp := config.ViperConfig{}
		for _, a := range targeted {
			c := *a
			c.TargetRules = nil
			tmp.Allowlists = append(tmp.Allowlists, &c)
		}
		tc, err := translateSafe(tmp)
		if err != nil {
			return config.Config{}, packExtras{}, fmt.Errorf("scanner: pack %s: %w", name, err)
		}
		for i, a := range targeted {
			for _, id := range a.TargetRules {
				ex.targeted[id] = append(ex.targeted[id], tc.Allowlists[i])
			}
		}
	}
	vc.Allowlists = global
	c, err := translateSafe(vc)
	if err != nil {
		return config.Config{}, packExtras{}, fmt.Errorf("scanner: pack %s: %w", name, err)
	}
	return c, ex, nil
}

var (
	defaultRulesOnce sync.Once
	defaultRules     *Rules
	defaultRulesErr  error
)

// DefaultRules returns the shipped rules, compiled once per process.
func DefaultRules() (*Rules, error) {
	defaultRulesOnce.Do(func() { defaultRules, defaultRulesErr = LoadRules() })
	return defaultRules, defaultRulesErr
}

// tightAllow maps allowlist regexes of gitleaks' default rules that let
// more through than they are meant to onto what they are meant as:
//   - the global `(?i)^true|false|null$`, meant for a secret that is only
//     one of the words: for want of a group it lets any secret pass that
//     starts with "true", ends with "null" or holds "false" anywhere (a
//     random key block now and then; a sender who wants a private key out
//     adds a line saying "false");
//   - vault-service-token's `s\.[A-Za-z]{24}`, meant for an "s." token of
//     letters alone (no real token is): unanchored, it also lets pass every
//     "hvs." token whose 24 characters after "hvs." are letters (a real
//     token's are random base64 after a fixed "CAESI": one in about fifty);
//   - curl-auth-user's placeholder passwords ("password", "test", "x"…):
//     unanchored, they let pass every password that starts with one, and
//     so every password that starts with an x.
//
// Each is one of the documented differences from gitleaks (see
// engine_diff_test.go).
var tightAllow = map[string]*regexp.Regexp{
	`(?i)^true|false|null$`: regexp.MustCompile(`(?i)^(?:true|false|null)$`),
	`s\.[A-Za-z]{24}`:       regexp.MustCompile(`^s\.[A-Za-z]{24}$`),
	`[^:]+:(?:change(?:it|me)|pass(?:word)?|pwd|test|token|\*+|x+)`: regexp.MustCompile(
		`^["']?[^:]+:(?:change(?:it|me)|pass(?:word)?|pwd|test|token|\*+|x+)["']?$`),
}

// tightenAllowlists returns lists with the regexes of tightAllow replaced,
// in new copies of the lists that change (a list's compiled pattern is
// built from its regexes once, by Validate).
func tightenAllowlists(lists []*config.Allowlist) ([]*config.Allowlist, error) {
	out := make([]*config.Allowlist, 0, len(lists))
	for _, a := range lists {
		regexes, changed := a.Regexes, false
		for i, re := range a.Regexes {
			if tight, ok := tightAllow[re.String()]; ok {
				if !changed {
					regexes, changed = slices.Clone(a.Regexes), true
				}
				regexes[i] = tight
			}
		}
		if !changed {
			out = append(out, a)
			continue
		}
		c := &config.Allowlist{Description: a.Description, MatchCondition: a.MatchCondition, Commits: a.Commits,
			Paths: a.Paths, RegexTarget: a.RegexTarget, Regexes: regexes, StopWords: a.StopWords}
		// Never the loose list instead: that would let the secrets through.
		if err := c.Validate(); err != nil {
			return nil, fmt.Errorf("scanner: tighten an allowlist of gitleaks' rules: %w", err)
		}
		out = append(out, c)
	}
	return out, nil
}

// tightenRules is tightenAllowlists for every rule's lists.
func tightenRules(rules map[string]config.Rule) (map[string]config.Rule, error) {
	out := make(map[string]config.Rule, len(rules))
	for id, r := range rules {
		als, err := tightenAllowlists(r.Allowlists)
		if err != nil {
			return nil, fmt.Errorf("%w (rule %s)", err, id)
		}
		r.Allowlists = als
		out[id] = r
	}
	return out, nil
}

// findExamples returns rules without the allowlist entries that let
// documentation example values pass (AWS's "AKIA…EXAMPLE"): a gateway
// cannot tell a pasted example from a real key named like one, and
// operators who want examples through allow the rule per host. It is one of
// the documented differences from gitleaks (see engine_diff_test.go).
func findExamples(rules map[string]config.Rule) map[string]config.Rule {
	out := make(map[string]config.Rule, len(rules))
	for id, r := range rules {
		var als []*config.Allowlist
		changed := false
		for _, a := range r.Allowlists {
			var keep []*regexp.Regexp
			for _, re := range a.Regexes {
				if strings.Contains(re.String(), "EXAMPLE") {
					changed = true
					continue
				}
				keep = append(keep, re)
			}
			if len(keep) == len(a.Regexes) {
				als = append(als, a)
				continue
			}
			if len(keep) == 0 && len(a.StopWords) == 0 && len(a.Commits) == 0 && len(a.Paths) == 0 {
				continue
			}
			c := &config.Allowlist{Description: a.Description, MatchCondition: a.MatchCondition, Commits: a.Commits,
				Paths: a.Paths, RegexTarget: a.RegexTarget, Regexes: keep, StopWords: a.StopWords}
			if err := c.Validate(); err != nil {
				als = append(als, a)
				continue
			}
			als = append(als, c)
		}
		if changed {
			r.Allowlists = als
		}
		out[id] = r
	}
	return out
}
