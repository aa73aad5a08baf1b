package scanner

import (
	stdregexp "regexp"
	"regexp/syntax"
	"slices"
	"unicode"
	"unicode/utf8"
)

// Tail checks: a cheap test at a keyword hit of whether the rule's regex
// can match through it, so that a window none of whose hits passes is not
// handed to the regex at all. Common words wake rules in code and chat
// text ("key", "token", "s." at a sentence's end), and most hits are not
// followed by what the rule needs ("key" then an operator, then a value;
// "s." then 24 letters and digits): the rule's regex, large as some are
// (generic-api-key costs go-re2 about a microsecond a byte), then never
// runs there.
//
// A regex qualifies when every way through it passes a node that matches
// only keywords of the rule (a literal, a small alternation, a run of
// finite parts): what follows that node in the regex, up to a bounded
// length, must then match right after the hit's keyword. The test is
// weaker than the regex, never stronger: empty-width assertions are
// dropped (they look at bytes the test does not see), and only a bounded
// prefix of what follows is required.

// Bounds of the tail a test requires: enough to reach past the operator
// and into the value of an assignment, small enough for Go's backtracker.
const (
	maxTailLen  = 128
	maxTailProg = 400
	// maxTailChecks is the most hits of one window tested; a window with
	// more runs the regex without a test. A test costs about a microsecond
	// (Go's backtracker), go-re2 over a window of ordinary text less than
	// that for each of its hits.
	maxTailChecks = 16
)

// tailCheck maps a keyword id to the anchored test of what must follow it.
type tailCheck map[int]*tailTest

// tailTest is the anchored regex of a tail, and the bytes it can start
// with: most hits fail on the byte after the keyword, where a table
// lookup answers for the backtracker.
type tailTest struct {
	re    *stdregexp.Regexp
	first *[256]bool // nil: the tail may be empty, or its start is not known
}

// pass reports whether the hit of keyword id ending at end may start a
// match: true when the keyword has no test (it is not the rule's anchor).
func (tc tailCheck) pass(text string, id, end int) bool {
	t, ok := tc[id]
	if !ok {
		return false
	}
	if t == nil {
		return true
	}
	if t.first != nil && end < len(text) && !t.first[text[end]] {
		return false
	}
	return t.re.MatchString(text[end:min(len(text), end+maxTailLen)])
}

// firstBytes is the set of bytes a match of re can start with, and
// whether re matches the empty string (then the set says nothing); ok is
// false for an operator it does not know. A rune from U+0080 stands for
// every byte from 0x80.
func firstBytes(re *syntax.Regexp) (set [256]bool, empty, ok bool) {
	addRune := func(r rune) {
		if r < utf8.RuneSelf {
			set[r] = true
			return
		}
		for b := utf8.RuneSelf; b < 256; b++ {
			set[b] = true
		}
	}
	switch re.Op {
	case syntax.OpNoMatch:
		return set, false, true
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return set, true, true
	case syntax.OpLiteral:
		if len(re.Rune) == 0 {
			return set, true, true
		}
		addRune(re.Rune[0])
		if re.Flags&syntax.FoldCase != 0 {
			for f := unicode.SimpleFold(re.Rune[0]); f != re.Rune[0]; f = unicode.SimpleFold(f) {
				addRune(f)
			}
		}
		return set, false, true
	case syntax.OpCharClass:
		for i := 0; i+1 < len(re.Rune); i += 2 {
			for r := re.Rune[i]; r <= re.Rune[i+1] && r < utf8.RuneSelf; r++ {
				set[r] = true
			}
			if re.Rune[i+1] >= utf8.RuneSelf {
				addRune(utf8.RuneSelf)
			}
		}
		return set, false, true
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		for b := range set {
			set[b] = true
		}
		set['\n'] = re.Op == syntax.OpAnyChar
		return set, false, true
	case syntax.OpCapture:
		return firstBytes(re.Sub[0])
	case syntax.OpStar, syntax.OpQuest, syntax.OpPlus, syntax.OpRepeat:
		set, empty, ok = firstBytes(re.Sub[0])
		return set, empty || re.Op == syntax.OpStar || re.Op == syntax.OpQuest || re.Op == syntax.OpRepeat && re.Min == 0, ok
	case syntax.OpConcat, syntax.OpAlternate:
		empty = re.Op == syntax.OpConcat
		for _, sub := range re.Sub {
			ss, se, sok := firstBytes(sub)
			if !sok {
				return set, false, false
			}
			for b, in := range ss {
				set[b] = set[b] || in
			}
			if re.Op == syntax.OpAlternate {
				empty = empty || se
				continue
			}
			if !se {
				return set, false, true
			}
		}
		return set, empty, true
	}
	return set, false, false
}

// newTailCheck builds the tests of a rule's regex for its keywords (kwID
// maps a lowercased keyword to its id); ok is false when the regex does
// not qualify.
func newTailCheck(re *syntax.Regexp, kws []string, kwID map[string]int) (tailCheck, bool) {
	var anchors []tailAnchor
	if !tailAnchors(re, nil, kws, &anchors) {
		return nil, false
	}
	tails := map[string][]*syntax.Regexp{} // keyword → its possible tails
	for _, a := range anchors {
		for _, k := range a.kws {
			tails[k] = append(tails[k], a.tail)
		}
	}
	tc := tailCheck{}
	for k, ts := range tails {
		id, ok := kwID[k]
		if !ok {
			return nil, false
		}
		alt := &syntax.Regexp{Op: syntax.OpAlternate, Sub: ts}
		if len(ts) == 1 {
			alt = ts[0]
		}
		anchored := &syntax.Regexp{Op: syntax.OpConcat, Sub: []*syntax.Regexp{{Op: syntax.OpBeginText}, alt}}
		if emptyTail(alt) {
			tc[id] = nil // nothing to test: every hit of it passes
			continue
		}
		compiled, err := stdregexp.Compile(anchored.String())
		if err != nil {
			return nil, false
		}
		if p, err := syntax.Compile(anchored.Simplify()); err != nil || len(p.Inst) > maxTailProg {
			tc[id] = nil
			continue
		}
		t := &tailTest{re: compiled}
		if first, empty, ok := firstBytes(alt); ok && !empty {
			t.first = &first
		}
		tc[id] = t
	}
	return tc, true
}

// tailAnchor is a keyword node and the (relaxed, bounded) tail after it.
type tailAnchor struct {
	kws  []string
	tail *syntax.Regexp
}

// tailAnchors adds the anchors of re followed by cont; it reports false
// when some match of re need not pass a keyword node.
func tailAnchors(re *syntax.Regexp, cont []*syntax.Regexp, kws []string, out *[]tailAnchor) bool {
	switch re.Op {
	case syntax.OpCapture:
		return tailAnchors(re.Sub[0], cont, kws, out)
	case syntax.OpAlternate:
		for _, s := range re.Sub {
			if !tailAnchors(s, cont, kws, out) {
				return false
			}
		}
		return true
	case syntax.OpConcat:
		subs := re.Sub
		for i := range subs {
			// A run of finite parts from i that matches only keywords.
			acc := []string{""}
			for j := i; j < len(subs); j++ {
				part, ok := finiteStrings(subs[j])
				if !ok {
					break
				}
				if acc, ok = product(acc, part); !ok {
					break
				}
				if allKeywords(acc, kws) {
					rest := append(slices.Clone(subs[j+1:]), cont...)
					*out = append(*out, tailAnchor{kws: acc, tail: boundedTail(rest)})
					return true
				}
			}
			// Or a group at i through which every match passes one.
			switch subs[i].Op {
			case syntax.OpCapture, syntax.OpAlternate, syntax.OpConcat:
				var got []tailAnchor
				if tailAnchors(subs[i], append(slices.Clone(subs[i+1:]), cont...), kws, &got) {
					*out = append(*out, got...)
					return true
				}
			}
		}
		return false
	}
	if fs, ok := finiteStrings(re); ok && allKeywords(fs, kws) {
		*out = append(*out, tailAnchor{kws: fs, tail: boundedTail(cont)})
		return true
	}
	return false
}

func allKeywords(ss, kws []string) bool {
	for _, s := range ss {
		if s == "" || !slices.Contains(kws, s) {
			return false
		}
	}
	return len(ss) > 0
}

// boundedTail is a regex with which every match of the parts (in a row)
// starts, at most maxTailLen bytes long.
func boundedTail(parts []*syntax.Regexp) *syntax.Regexp {
	t, _ := prefixOf(&syntax.Regexp{Op: syntax.OpConcat, Sub: parts}, maxTailLen)
	return t
}

// prefixOf is a regex P, at most budget bytes long, with a match of which
// every match of re starts: re itself when it is short enough (without its
// assertions), else the first parts of it, a long or unbounded repetition
// cut to its minimum. cut reports that P stops short of re's end, so that
// nothing after re may follow P.
func prefixOf(re *syntax.Regexp, budget int) (p *syntax.Regexp, cut bool) {
	empty := &syntax.Regexp{Op: syntax.OpEmptyMatch}
	if l := maxMatchLen(re); l != unbounded && l <= budget {
		return noAssertions(re), false
	}
	switch re.Op {
	case syntax.OpCapture:
		return prefixOf(re.Sub[0], budget)
	case syntax.OpStar, syntax.OpPlus, syntax.OpRepeat:
		n := re.Min
		switch re.Op {
		case syntax.OpStar:
			n = 0
		case syntax.OpPlus:
			n = 1
		}
		if l := maxMatchLen(re.Sub[0]); n > 0 && l != unbounded && n*l <= budget {
			return &syntax.Regexp{Op: syntax.OpRepeat, Min: n, Max: n, Sub: []*syntax.Regexp{noAssertions(re.Sub[0])}}, true
		}
		return empty, true
	case syntax.OpConcat:
		out := &syntax.Regexp{Op: syntax.OpConcat}
		for _, s := range re.Sub {
			q, stop := prefixOf(s, budget)
			out.Sub = append(out.Sub, q)
			budget -= maxMatchLen(q)
			if stop {
				return out, true
			}
		}
		return out, false
	case syntax.OpAlternate:
		out := &syntax.Regexp{Op: syntax.OpAlternate}
		for _, s := range re.Sub {
			q, stop := prefixOf(s, budget)
			out.Sub = append(out.Sub, q)
			cut = cut || stop
		}
		return out, cut
	}
	return empty, true
}

// noAssertions is re with every empty-width assertion matching always.
func noAssertions(re *syntax.Regexp) *syntax.Regexp {
	switch re.Op {
	case syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return &syntax.Regexp{Op: syntax.OpEmptyMatch}
	}
	if len(re.Sub) == 0 {
		return re
	}
	c := *re
	c.Sub = make([]*syntax.Regexp, len(re.Sub))
	for i, s := range re.Sub {
		c.Sub[i] = noAssertions(s)
	}
	return &c
}

// emptyTail reports whether re can only match the empty string: no test.
func emptyTail(re *syntax.Regexp) bool {
	return maxMatchLen(re) == 0
}
