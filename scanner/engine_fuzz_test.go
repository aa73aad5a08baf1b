package scanner

import (
	"strings"
	"testing"
)

// FuzzSecretAnywhere puts a secret at any offset of a text of any filler
// (keyword-dense ones merge windows, a long token stretches them) and
// requires the engine to find it: no window edge may cut it.
func FuzzSecretAnywhere(f *testing.F) {
	kinds := []string{"github-pat", "aws-access-token", "slack-bot-token", "jwt", "private-key", "anthropic-api-key", "gitlab-pat"}
	for _, at := range []int{0, 1, windowSide - 7, windowSide, windowSide + windowMargin + 3, 3 * windowSide, 5000} {
		for k := range kinds {
			for fl := range fillers {
				f.Add(uint16(at), uint8(k), uint8(fl), uint16(at/2))
			}
		}
	}
	r, err := DefaultRules()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, at uint16, kind, fill uint8, tail uint16) {
		k := kinds[int(kind)%len(kinds)]
		tok := MustFake(t, k)
		fl := fillers[int(fill)%len(fillers)]
		text := strings.Repeat(fl, int(at)/len(fl)+1)[:at] + " " + tok + " " + strings.Repeat(fl, int(tail)/len(fl)+1)[:tail]
		for got := range engineFindings(t, r, text) {
			if got.rule == k && strings.Contains(tok, got.secret) {
				return
			}
		}
		t.Errorf("%s at %d (filler %d, tail %d) not found", k, at, fill%uint8(len(fillers)), tail)
	})
}
