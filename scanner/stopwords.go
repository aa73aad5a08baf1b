package scanner

import (
	"slices"
	"strings"
	"sync"

	"github.com/zricethezav/gitleaks/v8/config"
)

// stopIndex finds which of an allowlist's stopwords a secret holds without
// trying each of them: generic-api-key has 1,446, and lowering and
// searching each one in every secret it matched cost ~35 µs a finding (an
// SDK's Idempotency-Key header is one on every request).
type stopIndex struct {
	words  []string           // lowered, in the list's order
	byPair map[uint16][]int32 // the words by their first two bytes
	short  []int32            // words of one byte
}

var stopIndexes sync.Map // *config.Allowlist → *stopIndex; lists do not change once loaded

func stopIndexOf(a *config.Allowlist) *stopIndex {
	if x, ok := stopIndexes.Load(a); ok {
		return x.(*stopIndex)
	}
	x := &stopIndex{byPair: map[uint16][]int32{}}
	for _, w := range a.StopWords {
		w = strings.ToLower(w)
		i := int32(len(x.words))
		switch {
		case w == "":
			continue
		case len(w) == 1:
			x.short = append(x.short, i)
		default:
			k := uint16(w[0])<<8 | uint16(w[1])
			x.byPair[k] = append(x.byPair[k], i)
		}
		x.words = append(x.words, w)
	}
	got, _ := stopIndexes.LoadOrStore(a, x)
	return got.(*stopIndex)
}

// in returns the stopwords lower (a lowered secret) holds, in the list's
// order: what replacing each of the list's words in turn would replace.
func (x *stopIndex) in(lower string) []string {
	var hit []int32
	for _, i := range x.short {
		if strings.Contains(lower, x.words[i]) {
			hit = append(hit, i)
		}
	}
	for p := 0; p+1 < len(lower); p++ {
		for _, i := range x.byPair[uint16(lower[p])<<8|uint16(lower[p+1])] {
			if strings.HasPrefix(lower[p:], x.words[i]) && !slices.Contains(hit, i) {
				hit = append(hit, i)
			}
		}
	}
	slices.Sort(hit)
	out := make([]string, len(hit))
	for k, i := range hit {
		out[k] = x.words[i]
	}
	return out
}
