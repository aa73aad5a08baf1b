package scanner

import (
	stdregexp "regexp"
	"regexp/syntax"
	"slices"
)

// Short-match variants of a large regex, for the secret group of each
// match. gitleaks' generic-api-key owes its size (too many instructions
// for Go's backtracker, 50 µs a match in either engine) to counted
// repetitions such as [\w.-]{0,50} and [\w.=-]{10,150}. On an input of n
// bytes, a repetition of a one-rune part with a bound of n or more never
// reaches its bound: with the bound dropped the regex matches the same,
// with the same preferences, so the same groups. A variant for inputs up
// to n bytes drops every such bound, and is kept when that makes it small
// enough for the backtracker.

// subVariant is a regex equal to the rule's on inputs of at most maxLen bytes.
type subVariant struct {
	maxLen int
	re     *stdregexp.Regexp
}

// shortVariants returns the variants of re, shortest inputs first.
func shortVariants(src string) []subVariant {
	p, err := syntax.Parse(src, syntax.Perl)
	if err != nil {
		return nil
	}
	var bounds []int
	eachBoundedRepeat(p, func(r *syntax.Regexp) { bounds = append(bounds, r.Max) })
	slices.Sort(bounds)
	bounds = slices.Compact(bounds)
	var out []subVariant
	for _, n := range bounds {
		q, _ := syntax.Parse(src, syntax.Perl) // a fresh tree to relax
		eachBoundedRepeat(q, func(r *syntax.Regexp) {
			if r.Max >= n {
				r.Max = -1
			}
		})
		prog, err := syntax.Compile(q.Simplify())
		if err != nil || len(prog.Inst) > maxBacktrackProg {
			continue
		}
		re, err := stdregexp.Compile(q.String())
		if err != nil {
			continue
		}
		out = append(out, subVariant{maxLen: n, re: re})
	}
	return out
}

// eachBoundedRepeat calls fn for every x{m,n} of re whose x matches one
// rune (a class, any character, a one-rune literal).
func eachBoundedRepeat(re *syntax.Regexp, fn func(*syntax.Regexp)) {
	if re.Op == syntax.OpRepeat && re.Max > 0 {
		switch s := re.Sub[0]; {
		case s.Op == syntax.OpCharClass && len(s.Rune) > 0, s.Op == syntax.OpAnyChar, s.Op == syntax.OpAnyCharNotNL,
			s.Op == syntax.OpLiteral && len(s.Rune) == 1:
			fn(re)
		}
	}
	for _, s := range re.Sub {
		eachBoundedRepeat(s, fn)
	}
}
