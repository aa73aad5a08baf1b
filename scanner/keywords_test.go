package scanner

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestKeywordSetStreams: the interleaved walk of long texts reports the
// same occurrences in the same order as one stream, also for keywords
// that straddle the quarters' borders, and finds each where it is.
func TestKeywordSetStreams(t *testing.T) {
	kws := []string{"key", "ey", "secret", "api_key", "password", "s.", "xoxb-", strings.Repeat("a", 34), "token"}
	k, ok := newKeywordSet(kws)
	if !ok {
		t.Fatal("newKeywordSet failed")
	}
	// The walks mask their index with len(next)-1 instead of checking it.
	if n := len(k.next); n&(n-1) != 0 || n < len(k.out)*k.nclass {
		t.Fatalf("table of %d entries for %d states of %d classes: want a power of two that holds them", n, len(k.out), k.nclass)
	}
	r := rand.New(rand.NewPCG(41, 43))
	parts := append([]string{" ", "the ", "KEY", "Se", "cret", "a", "aaaaaaaaaaaaaaaa", "\n", "x"}, kws...)
	for n := 0; n < 300; n++ {
		var b strings.Builder
		size := r.IntN(4 * (minStreamLen + 200))
		for b.Len() < size {
			b.WriteString(parts[r.IntN(len(parts))])
		}
		text := b.String()
		type occ struct{ start, id int }
		var got, want []occ
		k.each(text, func(start, id int) { got = append(got, occ{start, id}) })
		k.each1(text, func(start, id int) { want = append(want, occ{start, id}) })
		if !slices.Equal(got, want) {
			t.Fatalf("len %d: %d occurrences, want %d", len(text), len(got), len(want))
		}
		for _, o := range got {
			if !strings.EqualFold(text[o.start:o.start+len(kws[o.id])], kws[o.id]) {
				t.Fatalf("occurrence %v is %q, not %q", o, text[o.start:o.start+len(kws[o.id])], kws[o.id])
			}
		}
		// Every occurrence is found: count them another way.
		lower := strings.ToLower(text)
		count := 0
		for _, kw := range kws {
			for i := 0; i+len(kw) <= len(lower); i++ {
				if lower[i:i+len(kw)] == kw {
					count++
				}
			}
		}
		if count != len(got) {
			t.Fatalf("len %d: %d occurrences found, %d in the text", len(text), len(got), count)
		}
	}
}
