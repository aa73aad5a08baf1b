package scanner

import (
	"regexp/syntax"
	"strings"
	"unicode"
	"unicode/utf8"
)

// unbounded stands for a length without bound in the analysis below.
const unbounded = -1

// addLen adds lengths, unbounded absorbing.
func addLen(a, b int) int {
	if a == unbounded || b == unbounded {
		return unbounded
	}
	return a + b
}

func maxOf(a, b int) int {
	if a == unbounded || b == unbounded {
		return unbounded
	}
	return max(a, b)
}

// maxMatchLen is the longest match of re in bytes, or unbounded.
func maxMatchLen(re *syntax.Regexp) int {
	switch re.Op {
	case syntax.OpLiteral:
		n := 0
		for _, r := range re.Rune {
			l := utf8.RuneLen(r)
			if re.Flags&syntax.FoldCase != 0 {
				l = max(l, 3) // k and s fold to the Kelvin sign and long s
			}
			n += max(l, 1)
		}
		return n
	case syntax.OpCharClass:
		if len(re.Rune) == 0 {
			return 0
		}
		return max(utf8.RuneLen(min(re.Rune[len(re.Rune)-1], unicode.MaxRune)), 1)
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return utf8.UTFMax
	case syntax.OpCapture, syntax.OpQuest:
		return maxMatchLen(re.Sub[0])
	case syntax.OpStar, syntax.OpPlus:
		if maxMatchLen(re.Sub[0]) == 0 {
			return 0
		}
		return unbounded
	case syntax.OpRepeat:
		l := maxMatchLen(re.Sub[0])
		switch {
		case l == 0:
			return 0
		case re.Max < 0 || l == unbounded:
			return unbounded
		}
		return re.Max * l
	case syntax.OpConcat:
		n := 0
		for _, s := range re.Sub {
			n = addLen(n, maxMatchLen(s))
		}
		return n
	case syntax.OpAlternate:
		n := 0
		for _, s := range re.Sub {
			n = maxOf(n, maxMatchLen(s))
		}
		return n
	}
	return 0 // empty-width assertions, empty match, no match
}

// Limits of the finite-language expansion used to find keywords in a regex.
const (
	maxFiniteStrings = 64
	maxFiniteLen     = 64
)

// finiteStrings returns the lowercased strings re matches when they are
// few and short (a literal, a small class, their alternations and
// products), or false.
func finiteStrings(re *syntax.Regexp) ([]string, bool) {
	switch re.Op {
	case syntax.OpLiteral:
		return []string{strings.ToLower(string(re.Rune))}, true
	case syntax.OpCharClass:
		var out []string
		seen := map[string]bool{}
		for i := 0; i+1 < len(re.Rune); i += 2 {
			if re.Rune[i+1]-re.Rune[i] > maxFiniteStrings {
				return nil, false
			}
			for r := re.Rune[i]; r <= re.Rune[i+1]; r++ {
				s := strings.ToLower(string(r))
				if !seen[s] {
					seen[s] = true
					out = append(out, s)
				}
			}
		}
		return out, len(out) <= maxFiniteStrings
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return []string{""}, true
	case syntax.OpCapture:
		return finiteStrings(re.Sub[0])
	case syntax.OpQuest:
		s, ok := finiteStrings(re.Sub[0])
		return append(s, ""), ok && len(s) < maxFiniteStrings
	case syntax.OpRepeat:
		if re.Max < 0 || re.Max != re.Min || re.Min > 4 {
			return nil, false
		}
		sub := &syntax.Regexp{Op: syntax.OpConcat}
		for range re.Min {
			sub.Sub = append(sub.Sub, re.Sub[0])
		}
		return finiteStrings(sub)
	case syntax.OpConcat:
		acc := []string{""}
		for _, s := range re.Sub {
			part, ok := finiteStrings(s)
			if !ok {
				return nil, false
			}
			acc, ok = product(acc, part)
			if !ok {
				return nil, false
			}
		}
		return acc, true
	case syntax.OpAlternate:
		var out []string
		for _, s := range re.Sub {
			part, ok := finiteStrings(s)
			if !ok || len(out)+len(part) > maxFiniteStrings {
				return nil, false
			}
			out = append(out, part...)
		}
		return out, true
	}
	return nil, false
}

func product(a, b []string) ([]string, bool) {
	if len(a)*len(b) > maxFiniteStrings {
		return nil, false
	}
	out := make([]string, 0, len(a)*len(b))
	for _, x := range a {
		for _, y := range b {
			if len(x)+len(y) > maxFiniteLen {
				return nil, false
			}
			out = append(out, x+y)
		}
	}
	return out, true
}

// span bounds where a match lies relative to the start of a keyword it
// contains: it starts at most before bytes ahead of it and ends at most
// after bytes past it (either may be unbounded).
type span struct{ before, after int }

func (s span) size() int {
	if s.before == unbounded || s.after == unbounded {
		return 1 << 30
	}
	return s.before + s.after
}

// keywordSpan reports whether every match of re contains one of the
// (lowercased) keywords, and then where a match lies around it. Only then
// may the regex run in a window around keyword hits instead of over the
// whole text without losing a match gitleaks would report.
func keywordSpan(re *syntax.Regexp, kws []string) (span, bool) {
	if fs, ok := finiteStrings(re); ok {
		for _, s := range fs {
			if !containsKeyword(s, kws) {
				return span{}, false
			}
		}
		l := maxMatchLen(re)
		return span{l, l}, true
	}
	switch re.Op {
	case syntax.OpCapture:
		return keywordSpan(re.Sub[0], kws)
	case syntax.OpPlus:
		if _, ok := keywordSpan(re.Sub[0], kws); ok {
			return span{unbounded, unbounded}, true
		}
	case syntax.OpRepeat:
		if re.Min < 1 {
			return span{}, false
		}
		sp, ok := keywordSpan(re.Sub[0], kws)
		if !ok {
			return span{}, false
		}
		if re.Max < 0 {
			return span{unbounded, unbounded}, true
		}
		l := maxMatchLen(re.Sub[0])
		extra := 0
		if l == unbounded {
			extra = unbounded
		} else {
			extra = (re.Max - 1) * l
		}
		return span{addLen(sp.before, extra), addLen(sp.after, extra)}, true
	case syntax.OpAlternate:
		out := span{}
		for _, s := range re.Sub {
			sp, ok := keywordSpan(s, kws)
			if !ok {
				return span{}, false
			}
			out = span{maxOf(out.before, sp.before), maxOf(out.after, sp.after)}
		}
		return out, true
	case syntax.OpConcat:
		return concatSpan(re.Sub, kws)
	}
	return span{}, false
}

// concatSpan tries each part of a concatenation, and each run of adjacent
// finite parts as one (a keyword split over "[Aa]" "pi"), and keeps the
// tightest span.
func concatSpan(subs []*syntax.Regexp, kws []string) (span, bool) {
	lens := make([]int, len(subs))
	for i, s := range subs {
		lens[i] = maxMatchLen(s)
	}
	sum := func(a, b int) int {
		n := 0
		for _, l := range lens[a:b] {
			n = addLen(n, l)
		}
		return n
	}
	best, found := span{}, false
	consider := func(i, j int, sp span) {
		c := span{addLen(sum(0, i), sp.before), addLen(sp.after, sum(j, len(subs)))}
		if !found || c.size() < best.size() {
			best, found = c, true
		}
	}
	for i, s := range subs {
		if sp, ok := keywordSpan(s, kws); ok {
			consider(i, i+1, sp)
		}
		// Runs of finite parts starting here.
		acc := []string{""}
		for j := i; j < len(subs); j++ {
			part, ok := finiteStrings(subs[j])
			if !ok {
				break
			}
			if acc, ok = product(acc, part); !ok {
				break
			}
			all := true
			for _, s := range acc {
				all = all && containsKeyword(s, kws)
			}
			if all {
				l := sum(i, j+1)
				consider(i, j+1, span{l, l})
				break
			}
		}
	}
	return best, found
}

func containsKeyword(s string, kws []string) bool {
	for _, k := range kws {
		if strings.Contains(s, k) {
			return true
		}
	}
	return false
}

// stopBytes end a token: whitespace, quotes and the backtick.
const stopBytes = " \t\r\n\"'`"

func isStop(c byte) bool { return strings.IndexByte(stopBytes, c) >= 0 }

// tokenBounded reports whether every unbounded repetition in re is of a
// class (or literal) without stop bytes: the unbounded part of a match then
// lies within one token, and a window that reaches past the token's end
// holds the whole match.
func tokenBounded(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpStar, syntax.OpPlus:
		return noStop(re.Sub[0])
	case syntax.OpRepeat:
		if re.Max < 0 {
			return noStop(re.Sub[0])
		}
	}
	for _, s := range re.Sub {
		if !tokenBounded(s) {
			return false
		}
	}
	return true
}

func noStop(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpCharClass:
		for i := 0; i+1 < len(re.Rune); i += 2 {
			for _, c := range []byte(stopBytes) {
				if rune(c) >= re.Rune[i] && rune(c) <= re.Rune[i+1] {
					return false
				}
			}
		}
		return true
	case syntax.OpLiteral:
		return !strings.ContainsAny(string(re.Rune), stopBytes)
	}
	return false
}

// tokenTail reports, for a regex that is a concatenation of bounded parts,
// then parts without stop bytes (one of them unbounded), then a short tail
// (gitleaks' `(?:[\x60'"\s;]|\\[nr]|$)`), how long the bounded head can be.
// A match then ends at most windowMargin bytes past the end of the token
// that holds the head's end: its window needs no more than that.
func tokenTail(re *syntax.Regexp) (head int, ok bool) {
	for re.Op == syntax.OpCapture {
		re = re.Sub[0]
	}
	subs := []*syntax.Regexp{re}
	if re.Op == syntax.OpConcat {
		subs = re.Sub
	}
	u := -1
	for i, s := range subs {
		if maxMatchLen(s) == unbounded {
			u = i
			break
		}
		head += maxMatchLen(s)
	}
	if u < 0 {
		return 0, false
	}
	for i, s := range subs[u:] {
		last := u+i == len(subs)-1
		if !allNoStop(s) && !(last && maxMatchLen(s) != unbounded && maxMatchLen(s) <= windowMargin) {
			return 0, false
		}
	}
	return head, true
}

// allNoStop reports whether nothing re matches holds a stop byte.
func allNoStop(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpCharClass, syntax.OpLiteral:
		return noStop(re)
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return false
	}
	for _, s := range re.Sub {
		if !allNoStop(s) {
			return false
		}
	}
	return true
}
