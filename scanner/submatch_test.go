package scanner

import (
	"math/rand/v2"
	"regexp/syntax"
	"slices"
	"testing"
)

// TestShortVariantsAgree: on every match of a large rule in generated
// texts (and on cut and padded copies of it), the variant submatch would
// use gives the groups the rule's own regex gives.
func TestShortVariantsAgree(t *testing.T) {
	r, err := DefaultRules()
	if err != nil {
		t.Fatal(err)
	}
	rnd := rand.New(rand.NewPCG(51, 53))
	compared, rules := 0, 0
	for i := range r.eng.rules {
		er := &r.eng.rules[i]
		if len(er.subs) == 0 {
			continue
		}
		rules++
		p, err := syntax.Parse(er.cfg.Regex.String(), syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		for range 100 {
			text := filler(rnd, rnd.IntN(80)) + seps[rnd.IntN(len(seps))] + sampleFor(rnd, p) + seps[rnd.IntN(len(seps))] + filler(rnd, rnd.IntN(40))
			for _, l := range er.re.FindAllStringIndex(text, -1) {
				m := text[l[0]:l[1]]
				for _, in := range []string{m, m[:len(m)/2], m + " x", "k" + m} {
					want := er.re.FindStringSubmatch(in)
					if got := er.submatch(in); !slices.Equal(got, want) {
						t.Fatalf("%s on %q (%d bytes): groups %q, want %q", er.cfg.RuleID, in, len(in), got, want)
					}
					compared++
				}
			}
		}
	}
	if rules == 0 || compared < rules*100 {
		t.Fatalf("%d rules with variants, %d inputs compared", rules, compared)
	}
}
