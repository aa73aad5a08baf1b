package scanner

import (
	"context"
	"errors"
	"math"
	stdregexp "regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"sync"

	"github.com/zricethezav/gitleaks/v8/config"
)

// The engine runs gitleaks' rules the way gitleaks' detect package does
// (secret group, entropy, global and rule allowlists, stop words, the
// generic-rule filter) but not its way round: one keyword automaton pass
// finds every keyword of every rule, and a rule's regex then runs only in
// windows around its keywords' hits. A text without any hit costs that
// one pass.

// Window sizes. A side of a window that the rule does not bound is
// windowSide bytes and then to the end of the token there, when the rule's
// unbounded parts cannot cross a token's end (tokenBounded); for the other
// rules (a PEM block, a curl command line) it is maxSpanSide: a match of
// theirs longer than that may be missed, the one stated limit. A match
// touching an edge of its window that is not the edge of the text may be
// cut short, so the window then grows (doubling) and the regex runs again.
const (
	windowSide   = 256
	maxSpanSide  = 64 << 10
	windowMargin = 8 // context for \b and friends at a window's edge
)

// matcher is the part of a compiled regex the engine uses; Go's regexp and
// go-re2 both have it.
type matcher interface {
	FindAllStringIndex(s string, n int) [][]int
	FindStringSubmatch(s string) []string
}

type engineRule struct {
	cfg      config.Rule
	re       matcher // gitleaks' (go-re2 under the gore2regex tag)
	small    matcher // Go's regexp, for texts under smallText
	windowed bool    // every match holds a keyword: run around hits only
	sp       span
	large    bool // too many instructions for Go's backtracker
	token    bool // unbounded sides end with the token (tokenBounded)
	tail     bool // after the head the match stays in its token (tokenTail)
	head     int  // the head's length when tail
	generic  bool
	tails    tailCheck    // what must follow a keyword for a match; nil: no test
	subs     []subVariant // when large: smaller equals on short inputs
}

// engine is the compiled form of a gitleaks config; immutable.
type engine struct {
	rules   []engineRule
	kw      *keywordSet
	kwRules [][]int // keyword id → rules
	inToken []bool  // keyword id → a rule's token holds it (not besideToken)
	always  []int   // rules without keywords: they run on every text
	global  []*config.Allowlist
	scratch sync.Pool
}

var errTooManyKeywords = errors.New("scanner: rule keywords need more automaton states than supported")

// match is one finding of the engine in a text.
type match struct {
	rule       int
	start, end int    // of the regex match in the text
	secret     string // the secret group
	line       string // the text's line(s) around the match
	lineStart  int    // offset of line in the text
}

type engineScratch struct {
	hits  [][]kwHit // by rule: keyword hits
	woken []int
}

// kwHit is a keyword's occurrence: where it starts and ends, and its id.
type kwHit struct{ start, end, kw int }

// smallText is where the regex engines cross over (BenchmarkRuleRegex):
// go-re2 costs about a microsecond a call and then runs 3 to 30 times
// faster than Go's regexp, so Go's regexp reads shorter texts.
const smallText = 48

// find is the regex's matches in t, by the faster engine for its size.
func (er *engineRule) find(t string) [][]int {
	if len(t) < smallText {
		return er.small.FindAllStringIndex(t, -1)
	}
	return er.re.FindAllStringIndex(t, -1)
}

// submatch is the regex's groups on a match string: Go's regexp for short
// ones unless the program is too large for its backtracker (it then runs
// its slow NFA: 20 to 100 µs a match of generic-api-key, see
// BenchmarkSubmatch).
func (er *engineRule) submatch(t string) []string {
	if len(t) < smallText && !er.large {
		return er.small.FindStringSubmatch(t)
	}
	for _, v := range er.subs {
		if len(t) <= v.maxLen {
			return v.re.FindStringSubmatch(t)
		}
	}
	return er.re.FindStringSubmatch(t)
}

// maxBacktrackProg is Go's regexp's limit for its backtracker.
const maxBacktrackProg = 500

// newEngine compiles cfg's rules.
func newEngine(cfg config.Config) (*engine, error) {
	e := &engine{global: cfg.Allowlists}
	kwID := map[string]int{}
	var kws []string
	for _, id := range cfg.OrderedRules {
		r := cfg.Rules[id]
		if r.Regex == nil || r.Path != nil || r.SkipReport {
			// Path rules match file names, which requests do not have;
			// skipReport rules only feed composite rules.
			continue
		}
		er := engineRule{cfg: r, re: r.Regex, small: r.Regex, generic: strings.Contains(strings.ToLower(r.RuleID), "generic")}
		if re, err := stdregexp.Compile(r.Regex.String()); err == nil {
			er.small = re
		}
		lk := make([]string, 0, len(r.Keywords))
		for _, k := range r.Keywords {
			if k = strings.ToLower(k); k != "" {
				lk = append(lk, k)
			}
		}
		if p, err := syntax.Parse(r.Regex.String(), syntax.Perl); err == nil {
			if prog, err := syntax.Compile(p.Simplify()); err == nil {
				er.large = len(prog.Inst) > maxBacktrackProg
			}
		}
		if er.large {
			er.subs = shortVariants(r.Regex.String())
		}
		if len(lk) > 0 {
			if p, err := syntax.Parse(r.Regex.String(), syntax.Perl); err == nil {
				er.sp, er.windowed = keywordSpan(p, lk)
				er.token = tokenBounded(p)
				er.head, er.tail = tokenTail(p)
			}
		}
		idx := len(e.rules)
		e.rules = append(e.rules, er)
		if len(lk) == 0 {
			e.always = append(e.always, idx)
			continue
		}
		parsed, perr := syntax.Parse(r.Regex.String(), syntax.Perl)
		for _, k := range lk {
			id, ok := kwID[k]
			if !ok {
				id = len(kws)
				kwID[k] = id
				kws = append(kws, k)
				e.kwRules = append(e.kwRules, nil)
				e.inToken = append(e.inToken, false)
			}
			e.inToken[id] = e.inToken[id] || perr != nil || !besideToken(parsed, k)
			if !slices.Contains(e.kwRules[id], idx) {
				e.kwRules[id] = append(e.kwRules[id], idx)
			}
		}
	}
	kw, ok := newKeywordSet(kws)
	if !ok {
		return nil, errTooManyKeywords
	}
	for i := range e.rules {
		er := &e.rules[i]
		if !er.windowed {
			continue
		}
		if p, err := syntax.Parse(er.cfg.Regex.String(), syntax.Perl); err == nil {
			lk := make([]string, 0, len(er.cfg.Keywords))
			for _, k := range er.cfg.Keywords {
				lk = append(lk, strings.ToLower(k))
			}
			if tc, ok := newTailCheck(p, lk, kwID); ok {
				er.tails = tc
			}
		}
	}
	e.kw = kw
	n := len(e.rules)
	e.scratch.New = func() any { return &engineScratch{hits: make([][]kwHit, n)} }
	return e, nil
}

// besideToken reports a keyword that re holds only as a word beside the
// token ("curl", "heroku": literal outside the capture groups, in none of
// them), which a token cut into pieces is sent without (fieldjoin.go joins
// pieces only around the other keywords). A keyword the parser factored
// into pieces of alternations ("AKIA|ASIA" is "A[KS]IA") is in no literal:
// it counts as in the token, which costs a look but misses nothing.
func besideToken(re *syntax.Regexp, kw string) bool {
	in, out := false, false
	var walk func(n *syntax.Regexp, capture bool)
	walk = func(n *syntax.Regexp, capture bool) {
		switch n.Op {
		case syntax.OpCapture:
			capture = true
		case syntax.OpLiteral:
			if strings.Contains(strings.ToLower(string(n.Rune)), kw) {
				in, out = in || capture, out || !capture
			}
		}
		for _, c := range n.Sub {
			walk(c, capture)
		}
	}
	walk(re, re.MaxCap() == 0)
	return out && !in
}

// detect calls emit for every finding in text, in gitleaks' terms.
func (e *engine) detect(ctx context.Context, text string, emit func(match)) error {
	_, _, err := e.detectJoins(ctx, text, emit)
	return err
}

// detectJoins is detect, and reports whether a keyword is in a literal that
// code joins to another (concat.go), and where keywords that a token holds
// end in a token cut by a line break (foldedAfter, at most maxFolds): the
// rules are then run over the joined literals, or lines, too.
func (e *engine) detectJoins(ctx context.Context, text string, emit func(match)) (joins bool, folds []int, err error) {
	sc := e.scratch.Get().(*engineScratch)
	foldStop, foldLimited := 0, false // where the last look for a folded token stopped (foldedAfter)
	defer func() {
		for _, r := range sc.woken {
			sc.hits[r] = sc.hits[r][:0]
		}
		sc.woken = sc.woken[:0]
		e.scratch.Put(sc)
	}()
	e.kw.each(text, func(start, id int) {
		if !joins && quotedBeforeJoin(text, start+e.kw.lens[id]) {
			joins = true
		}
		// A keyword in the run an earlier one was looked at in gets the
		// same answer; in a long run, the look goes on where it stopped.
		if end := start + e.kw.lens[id]; e.inToken[id] && (end > foldStop || foldLimited) && len(folds) < maxFolds {
			var folded bool
			if folded, foldStop, foldLimited = foldedAfter(text, end, foldStop); folded {
				folds = append(folds, end)
			}
		}
		for _, r := range e.kwRules[id] {
			if len(sc.hits[r]) == 0 {
				sc.woken = append(sc.woken, r)
			}
			sc.hits[r] = append(sc.hits[r], kwHit{start, start + e.kw.lens[id], id})
		}
	})
	var found []match
	run := func(r int) {
		er := &e.rules[r]
		if er.windowed {
			hits := sc.hits[r]
			// In order of their ends: a longer keyword that ends later
			// may start earlier.
			if !slices.IsSortedFunc(hits, byStart) {
				slices.SortStableFunc(hits, byStart)
			}
			found = e.windows(er, r, text, hits, found)
		} else {
			found = e.check(er, r, text, 0, er.find(text), found)
		}
	}
	for _, r := range e.always {
		run(r)
	}
	slices.Sort(sc.woken)
	for _, r := range sc.woken {
		if ctx.Err() != nil {
			return joins, folds, ErrTimeout
		}
		run(r)
	}
	// gitleaks' filter: a generic rule's finding gives way to another
	// rule's finding on the same line that contains its secret.
	var specific map[int][]string // line start → secrets of non-generic findings
	for _, m := range found {
		if !e.rules[m.rule].generic {
			if specific == nil {
				specific = map[int][]string{}
			}
			specific[m.lineStart] = append(specific[m.lineStart], m.secret)
		}
	}
	for _, m := range found {
		if e.rules[m.rule].generic && shadowed(specific[m.lineStart], m.secret) {
			continue
		}
		emit(m)
	}
	return joins, folds, ctx.Err()
}

func byStart(a, b kwHit) int { return a.start - b.start }

func shadowed(others []string, secret string) bool {
	for _, o := range others {
		if strings.Contains(o, secret) {
			return true
		}
	}
	return false
}

// windows runs a rule around its sorted hits.
func (e *engine) windows(er *engineRule, r int, text string, hits []kwHit, found []match) []match {
	// side is a window's reach on one side and whether it then extends to
	// the token's end.
	side := func(n int) (int, bool) {
		switch {
		case n != unbounded:
			return n + windowMargin, false
		case er.token:
			return windowSide, true
		}
		return maxSpanSide, false
	}
	before, extBefore := side(er.sp.before)
	after, extAfter := side(er.sp.after)
	if er.tail && er.sp.after == unbounded {
		after, extAfter = er.head, true
	}
	stop := -1 // the last token end found: hits before it end there too
	end := func(h int) int {
		we := min(len(text), h+after)
		if extAfter {
			if we <= stop {
				we = stop
			} else {
				for we < len(text) && !isStop(text[we]) {
					we++
				}
				stop = we
			}
			we = min(len(text), we+windowMargin)
		}
		return we
	}
	begin := func(h int) int {
		ws := max(0, h-before)
		if extBefore {
			for ws > 0 && !isStop(text[ws-1]) {
				ws--
			}
			ws = max(0, ws-windowMargin)
		}
		return ws
	}
	lastEnd := 0 // matches must not overlap, as in one FindAll over the text
	for i := 0; i < len(hits); {
		first := i
		ws, we := begin(hits[i].start), end(hits[i].start)
		i++
		for i < len(hits) && begin(hits[i].start) <= we {
			we = max(we, end(hits[i].start))
			i++
		}
		// A window of many hits is run as it is: checking each would cost
		// more than the regex over it (a text with a keyword on every line).
		if er.tails != nil && i-first <= maxTailChecks && !er.anyPasses(text, hits[first:i]) {
			continue // no match can pass through these hits
		}
		grow := windowSide
		for {
			locs := er.find(text[ws:we])
			left, right := false, false
			for _, l := range locs {
				left = left || l[0] == 0 && ws > 0
				right = right || l[1] == we-ws && we < len(text)
			}
			if !left && !right {
				var kept [][]int
				for _, l := range locs {
					if ws+l[0] >= lastEnd {
						kept = append(kept, l)
					}
				}
				found = e.check(er, r, text, ws, kept, found)
				if len(kept) > 0 {
					lastEnd = ws + kept[len(kept)-1][1]
				}
				break
			}
			if left {
				ws = max(0, ws-grow)
			}
			if right {
				we = min(len(text), we+grow)
				for i < len(hits) && begin(hits[i].start) <= we {
					we = max(we, end(hits[i].start))
					i++
				}
			}
			grow *= 2
		}
	}
	return found
}

// anyPasses reports whether one of the hits passes the rule's tail check.
func (er *engineRule) anyPasses(text string, hits []kwHit) bool {
	for _, h := range hits {
		if er.tails.pass(text, h.kw, h.end) {
			return true
		}
	}
	return false
}

// check applies gitleaks' per-match logic to the regex matches at locs
// (offsets from base).
func (e *engine) check(er *engineRule, r int, text string, base int, locs [][]int, found []match) []match {
	for _, l := range locs {
		start, end := base+l[0], base+l[1]
		raw := text[start:end]
		m := strings.Trim(raw, "\n")
		// gitleaks keeps the start and cuts the end to the trimmed length.
		end = start + len(m)
		ls := strings.LastIndexByte(text[:start], '\n') + 1
		le := strings.IndexByte(text[end:], '\n')
		if le < 0 {
			le = len(text)
		} else {
			le += end
		}
		line := text[ls:le]
		secret := m
		if groups := er.submatch(m); len(groups) >= 2 {
			if g := er.cfg.SecretGroup; g > 0 {
				if len(groups) <= g {
					continue
				}
				secret = groups[g]
			} else {
				for _, s := range groups[1:] {
					if s != "" {
						secret = s
						break
					}
				}
			}
		}
		if er.cfg.Entropy != 0 && shannonEntropy(secret) <= er.cfg.Entropy {
			continue
		}
		if allowed(e.global, secret, m, line, onlyStopword) || allowed(er.cfg.Allowlists, secret, m, line, stopwordBesideNoKey) {
			continue
		}
		found = append(found, match{rule: r, start: start, end: end, secret: secret, line: line, lineStart: ls})
	}
	return found
}

// allowed is gitleaks' checkFindingAllowed for a fragment without commit
// or path (what requests are), with stop, which tells whether a list's
// stopwords let the secret pass: stopwordBesideNoKey for a rule's lists,
// onlyStopword for the global ones.
func allowed(lists []*config.Allowlist, secret, m, line string, stop func(*config.Allowlist, string) bool) bool {
	for _, a := range lists {
		target := secret
		switch a.RegexTarget {
		case "match":
			target = m
		case "line":
			target = line
		}
		regexOK := a.RegexAllowed(target)
		stopOK := stop(a, secret)
		if a.MatchCondition == config.AllowlistMatchAnd {
			ok := true
			if len(a.Commits) > 0 {
				ok = false
			}
			if len(a.Paths) > 0 {
				ok = ok && a.PathAllowed("")
			}
			if len(a.Regexes) > 0 {
				ok = ok && regexOK
			}
			if len(a.StopWords) > 0 {
				ok = ok && stopOK
			}
			if ok {
				return true
			}
			continue
		}
		if regexOK || stopOK {
			return true
		}
	}
	return false
}

// stopwordBesideNoKey is the test for a rule's own stopwords (generic-api-key
// has 1,446: "client", "access", "admin"…): gitleaks lets a secret pass
// that holds one, so a sender who wants a key of no known format out adds
// a word to it ("client" + key). Here the secret passes when it holds one
// and, with the stopwords it holds cut out, no generated-looking run of
// letters and digits (randomRun: 16 or more, both in it) is left; what the
// stopwords are there for ("client_credentials", "access_token_url", a
// UUID) passes as in gitleaks. One of the documented differences from
// gitleaks (see engine_diff_test.go).
func stopwordBesideNoKey(a *config.Allowlist, secret string) bool {
	if ok, _ := a.ContainsStopWord(secret); !ok {
		return false
	}
	rest := strings.ToLower(secret)
	for _, w := range stopIndexOf(a).in(rest) {
		rest = strings.ReplaceAll(rest, w, " ")
	}
	return !randomRun(rest)
}

// maxStopwordRest is how many letters and digits a secret may hold besides
// a global stopword and still pass as the placeholder it is.
const maxStopwordRest = 10

// onlyStopword is the test for the global lists' stopwords, which apply to
// every rule: gitleaks lets a secret pass that holds one anywhere, so a
// private key with a line saying "abcdefghijklmnopqrstuvwxyz" (one of
// them) goes out, and a sender who wants one out can add that line. Here a
// secret passes when it is the stopword, as often as it holds it, and at
// most maxStopwordRest letters and digits more: the placeholders the
// stopwords are there for ("abcdefghijklmnopqrstuvwxyz0123456789", the
// alphabet in both cases, a sample UUID alone). One of the documented
// differences from gitleaks (see engine_diff_test.go).
func onlyStopword(a *config.Allowlist, secret string) bool {
	if ok, _ := a.ContainsStopWord(secret); !ok {
		return false
	}
	lower := strings.ToLower(secret)
	for _, w := range stopIndexOf(a).in(lower) {
		rest := 0
		for _, c := range []byte(strings.ReplaceAll(lower, w, "")) {
			if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
				rest++
			}
		}
		if rest <= maxStopwordRest {
			return true
		}
	}
	return false
}

// shannonEntropy is gitleaks' measure, exactly: counts by rune, divided
// by the length in bytes.
func shannonEntropy(s string) float64 {
	if s == "" {
		return 0
	}
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			ascii = false
			break
		}
	}
	if ascii {
		return entropy(s)
	}
	counts := map[rune]int{}
	for _, r := range s {
		counts[r]++
	}
	inv := 1.0 / float64(len(s))
	var h float64
	for _, c := range counts {
		f := float64(c) * inv
		h -= f * math.Log2(f)
	}
	return h
}
