package scanner

import "testing"

func TestEngineSpans(t *testing.T) {
	r, err := DefaultRules()
	if err != nil {
		t.Fatal(err)
	}
	for _, er := range r.eng.rules {
		t.Logf("%-45s windowed=%v before=%d after=%d tail=%v head=%d token=%v", er.cfg.RuleID, er.windowed, er.sp.before, er.sp.after, er.tail, er.head, er.token)
	}
	t.Logf("always: %d", len(r.eng.always))
}
