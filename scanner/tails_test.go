package scanner

import (
	"context"
	"math/rand/v2"
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
