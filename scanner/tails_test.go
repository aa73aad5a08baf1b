package scanner

import (
	"context"
	"math/rand/v2"
	"regexp"
	"regexp/syntax"
	"testing"
)

// TestTailChecksPassEveryMatch: on samples of each rule's regex in random
// surroundings, every match the rule's regex finds holds a keyword hit
// that passes the rule's tail check (else windows would skip it).
func TestTailChecksPassEveryMatch(t *testing.T) {
	r, err := DefaultRules()
	if err != nil {
		t.Fatal(err)
	}
	e := r.eng
	rnd := rand.New(rand.NewPCG(31, 37))
	checked, tested := 0, 0
	for ri := range e.rules {
		er := &e.rules[ri]
		if er.tails == nil {
			continue
		}
		tested++
		p, err := syntax.Parse(er.cfg.Regex.String(), syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		for range 40 {
			text := filler(rnd, rnd.IntN(300)) + seps[rnd.IntN(len(seps))] + sampleFor(rnd, p) + seps[rnd.IntN(len(seps))] + filler(rnd, rnd.IntN(100))
			var hits []kwHit
			e.kw.each(text, func(start, id int) {
				hits = append(hits, kwHit{start, start + e.kw.lens[id], id})
			})
			for _, m := range er.re.FindAllStringIndex(text, -1) {
				var in []kwHit
				for _, h := range hits {
					if h.start >= m[0] && h.end <= m[1] {
						in = append(in, h)
					}
				}
				checked++
				if !er.anyPasses(text, in) {
					t.Fatalf("%s: match %q has no hit that passes its tail check", er.cfg.RuleID, text[m[0]:m[1]])
				}
			}
		}
	}
	if tested < len(e.rules)/2 || checked < tested*10 {
		t.Fatalf("%d rules with tail checks, %d matches checked: the checks or the samples are broken", tested, checked)
	}
}

// TestTailCheckRefuses: the check turns down what cannot start a match,
// so that it saves regex runs at all.
func TestTailCheckRefuses(t *testing.T) {
	r, err := DefaultRules()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		rule, text string
		pass       bool
	}{
		{"generic-api-key", "func (c *Client) key() string { return c.k }", false},
		{"generic-api-key", "for _, key := range keys {", false},
		{"generic-api-key", `api_key = "Zk3vQ9tLm2Xp8Rw4Yb7N"`, true},
		{"vault-service-token", "the tests. They pass now.", false},
		{"vault-service-token", "token s.abcdefghijklmnopqrstuvwx here", true},
	} {
		var er *engineRule
		for i := range r.eng.rules {
			if r.eng.rules[i].cfg.RuleID == c.rule {
				er = &r.eng.rules[i]
			}
		}
		if er == nil || er.tails == nil {
			t.Fatalf("%s: no tail check", c.rule)
		}
		var hits []kwHit
		r.eng.kw.each(c.text, func(start, id int) { hits = append(hits, kwHit{start, start + r.eng.kw.lens[id], id}) })
		if got := er.anyPasses(c.text, hits); got != c.pass {
			t.Errorf("%s on %q: passes %v, want %v", c.rule, c.text, got, c.pass)
		}
		n := 0
		if err := r.eng.detect(context.Background(), c.text, func(match) { n++ }); err != nil {
			t.Fatal(err)
		}
		if !c.pass && n != 0 {
			t.Errorf("%s on %q: %d findings where the check refuses", c.rule, c.text, n)
		}
	}
}

// TestFirstBytes: a regex's matches start with a byte of its first-byte
// set, and the set leaves out what no match starts with.
func TestFirstBytes(t *testing.T) {
	rnd := rand.New(rand.NewPCG(41, 43))
	for _, c := range []struct {
		re      string
		empty   bool
		in, out string // bytes in the set, and not
	}{
		{`(?i)[ \t]{0,3}(?:=|:)\s*["']?[a-z0-9]{8}`, false, " \t=:", "a\"x)"},
		{`\b(?:key|tok)+`, false, "kt", "eK )"},
		{`(?i)k`, false, "kK\xe2", "j"},
		{`[^a]x`, false, "b\x80\n", "a"},
		{`.y`, false, "y\xff", "\n"},
		{`a?b*`, true, "", ""},
		{`(?:a|)c`, false, "ac", "b"},
	} {
		p, err := syntax.Parse(c.re, syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		set, empty, ok := firstBytes(p)
		if !ok || empty != c.empty {
			t.Fatalf("%s: ok %v, empty %v", c.re, ok, empty)
		}
		for _, b := range []byte(c.in) {
			if !set[b] {
				t.Errorf("%s: %q not in the set", c.re, b)
			}
		}
		for _, b := range []byte(c.out) {
			if set[b] {
				t.Errorf("%s: %q in the set", c.re, b)
			}
		}
		re := regexp.MustCompile(`^(?:` + c.re + `)`)
		for range 2000 {
			s := randomBytes(rnd, 1+rnd.IntN(12))
			if loc := re.FindStringIndex(s); loc != nil && loc[1] > 0 && !set[s[0]] {
				t.Fatalf("%s matches %q, whose first byte is not in the set", c.re, s)
			}
		}
	}
}

// randomBytes is n bytes drawn mostly from the ones regexes above name.
func randomBytes(rnd *rand.Rand, n int) string {
	const alphabet = " \t=:\"'abckKtoyxe0189\n)\x80\xe2\xff"
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[rnd.IntN(len(alphabet))]
	}
	return string(b)
}
