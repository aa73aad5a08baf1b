package scanner

import (
	"context"
	"strings"
	"testing"
)

// gitleaks' global allowlist means to let a secret that is only "true",
// "false" or "null" pass; as written it lets any secret holding "false"
// pass. A private key with a line that says "false" is found here (gitleaks
// lets it out), and the words alone still pass.
func TestWordAllowlistAnchored(t *testing.T) {
	r, err := DefaultRules()
	if err != nil {
		t.Fatal(err)
	}
	key := MustFake(t, "private-key")
	lines := strings.Split(key, "\n")
	withFalse := strings.Join(append(append(append([]string(nil), lines[:2]...), "false"), lines[2:]...), "\n")
	for name, text := range map[string]string{
		"a line that says false": withFalse,
		"false inside a line":    strings.Replace(key, lines[3], lines[3][:10]+"faLSe"+lines[3][15:], 1),
	} {
		var got []string
		err := r.eng.detect(context.Background(), "key: "+text+"\n", func(m match) { got = append(got, r.eng.rules[m.rule].cfg.RuleID) })
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(strings.Join(got, ","), "private-key") {
			t.Errorf("%s: private key not found (findings %v)", name, got)
		}
	}

	lists, err := anchorWordAllowlist(r.cfg.Allowlists)
	if err != nil {
		t.Fatal(err)
	}
	pass := func(s string) bool { return allowed(lists, s, s, s) }
	for _, s := range []string{"true", "false", "null", "FALSE", "True"} {
		if !pass(s) {
			t.Errorf("%q: want allowed, as gitleaks means it", s)
		}
	}
	for _, s := range []string{"xfalsex", "trueSecret9f8e7d", "sk-a1b2c3null", "AbCdfalse12345678"} {
		if pass(s) {
			t.Errorf("%q: allowed, want it checked like any secret", s)
		}
	}
}
