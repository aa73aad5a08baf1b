package scanner

import (
	"strings"
	"testing"
)

// The stopword index finds what trying every stopword finds, in the same
// order.
func TestStopIndexFindsEveryStopword(t *testing.T) {
	s := testScanner(t)
	for _, er := range s.Rules.eng.rules {
		for _, a := range er.cfg.Allowlists {
			if len(a.StopWords) == 0 {
				continue
			}
			x := stopIndexOf(a)
			for i := range 300 {
				w := a.StopWords[(i*7919)%len(a.StopWords)]
				v := a.StopWords[(i*104729)%len(a.StopWords)]
				secret := strings.ToLower(randomString(base62, i%13) + w + randomString(base62, i%5) + v + "x")
				var want []string
				for _, sw := range a.StopWords {
					if sw = strings.ToLower(sw); sw != "" && strings.Contains(secret, sw) {
						want = append(want, sw)
					}
				}
				if got := x.in(secret); strings.Join(got, ",") != strings.Join(want, ",") {
					t.Fatalf("%s: %q: got %q, want %q", er.cfg.RuleID, secret, got, want)
				}
			}
		}
	}
}
