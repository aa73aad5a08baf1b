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

// TestWalk4 runs each's four-stream step (in assembly on amd64) against
// walk4Go on the shipped rules' automaton: the same stops, with the same
// states, from every stop on to the end of the streams.
func TestWalk4(t *testing.T) {
	rs, err := DefaultRules()
	if err != nil {
		t.Fatal(err)
	}
	k := rs.eng.kw
	r := rand.New(rand.NewPCG(47, 53))
	parts := []string{" ", "the ", "KEY", "Se", "cret", "ghp_", "xoxb-", "AKIA", "token", "\x00", "\xff", "é", "-----BEGIN", "api", "ey", "q~"}
	for n := 0; n < 500; n++ {
		var streams [interleave]string
		size := r.IntN(300)
		for s := range streams {
			var b strings.Builder
			for b.Len() < size {
				if r.IntN(3) == 0 {
					b.WriteByte(byte(r.IntN(256)))
				} else {
					b.WriteString(parts[r.IntN(len(parts))])
				}
			}
			streams[s] = b.String()[:size]
		}
		var got, want [interleave]uint32
		stops := 0
		for i := 0; ; i++ {
			gi := walk4(k.next, &k.class, streams[0], streams[1], streams[2], streams[3], i, &got)
			wi := walk4Go(k.next, &k.class, streams[0], streams[1], streams[2], streams[3], i, &want)
			if gi != wi || got != want {
				t.Fatalf("text %d from %d: stopped at %d with %x, want %d with %x", n, i, gi, got, wi, want)
			}
			if gi >= size {
				break
			}
			stops++
			i = gi
			for s := range got {
				got[s] &^= termBit
			}
			want = got
		}
		if n == 0 && stops == 0 && size > 0 {
			t.Log("no stop in the first text")
		}
	}
}
