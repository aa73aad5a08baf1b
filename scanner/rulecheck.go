package scanner

import (
	"fmt"

	"github.com/zricethezav/gitleaks/v8/config"
	"github.com/zricethezav/gitleaks/v8/regexp"
)

// translateSafe is vc.Translate, which compiles the regexes with
// MustCompile: a pack with a bad regex would panic inside LoadRules. The
// panic is recovered and turned into an error that names the rule (or
// allowlist) and the regex, found by compiling the pack's regexes one by
// one: that is done only after a panic, so a good pack compiles once.
func translateSafe(vc config.ViperConfig) (c config.Config, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = badRegex(vc)
			if err == nil {
				err = fmt.Errorf("translate: %v", p)
			}
		}
	}()
	return vc.Translate()
}

// badRegex is the first regex of vc that does not compile.
func badRegex(vc config.ViperConfig) error {
	for _, r := range vc.Rules {
		for _, x := range []struct{ what, re string }{{"regex", r.Regex}, {"path", r.Path}} {
			if x.re != "" {
				if err := compiles(x.re); err != nil {
					return fmt.Errorf("rule %q: %s %q: %w", r.ID, x.what, x.re, err)
				}
			}
		}
		als := r.Allowlists
		if r.AllowList != nil {
			als = append(als, r.AllowList)
		}
		for _, a := range als {
			for _, re := range append(append([]string(nil), a.Regexes...), a.Paths...) {
				if err := compiles(re); err != nil {
					return fmt.Errorf("rule %q: allowlist %q: %w", r.ID, re, err)
				}
			}
		}
	}
	als := vc.Allowlists
	if vc.AllowList != nil {
		als = append(als, vc.AllowList)
	}
	for _, a := range als {
		for _, re := range append(append([]string(nil), a.Regexes...), a.Paths...) {
			if err := compiles(re); err != nil {
				return fmt.Errorf("allowlist %q: %w", re, err)
			}
		}
	}
	return nil
}

// compiles reports why gitleaks' regex engine (go-re2 under the
// gore2regex tag, Go's regexp otherwise) refuses expr.
func compiles(expr string) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
		}
	}()
	regexp.MustCompile(expr)
	return nil
}
