package scanner

import "testing"

// TestEngineSpans keeps the windowing honest: the shipped rules whose
// regex the analysis cannot tie to a keyword run over whole texts, and a
// rule joining them (after a gitleaks update) should be a choice.
func TestEngineSpans(t *testing.T) {
	r, err := DefaultRules()
	if err != nil {
		t.Fatal(err)
	}
	whole := 0
	for _, er := range r.eng.rules {
		if !er.windowed {
			whole++
			t.Logf("whole text: %s", er.cfg.RuleID)
		}
	}
	t.Logf("%d of %d rules windowed, %d without keywords", len(r.eng.rules)-whole, len(r.eng.rules), len(r.eng.always))
	if whole > 8 {
		t.Errorf("%d rules run over whole texts, want at most 8", whole)
	}
}
