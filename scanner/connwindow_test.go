package scanner

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestConnWindowsAsWholeText checks that connRE run in eachConnWindow's
// windows finds what it finds on the whole text, on random texts made of
// the bytes its parts turn on.
func TestConnWindowsAsWholeText(t *testing.T) {
	parts := []string{"://", "@", ":", "/", " ", "\n", "\"", "'", "<", "_", ".", "-", "+", "x", "pg", "postgres",
		"u", "pw0rd", "host", "?", "#", "\v", "abcdefghijklmnopqrstuvwxyz", strings.Repeat("p", 70), strings.Repeat("q", 130)}
	r := rand.New(rand.NewPCG(1, 2))
	found := 0
	for n := 0; n < 20000; n++ {
		var b strings.Builder
		for k := r.IntN(40); k > 0; k-- {
			if r.IntN(4) == 0 {
				b.WriteString("pg://u:pw0rd@host") // a match to cut and join with the rest
			}
			b.WriteString(parts[r.IntN(len(parts))])
		}
		text := b.String()
		var want, got [][]int
		for _, m := range connRE.FindAllStringSubmatchIndex(text, -1) {
			want = append(want, m)
		}
		eachConnWindow(text, func(ws, we int) {
			for _, m := range connRE.FindAllStringSubmatchIndex(text[ws:we], -1) {
				for i := range m {
					if m[i] >= 0 {
						m[i] += ws
					}
				}
				got = append(got, m)
			}
		})
		if !slices.EqualFunc(want, got, slices.Equal) {
			t.Fatalf("%q: whole text %v, windows %v", text, want, got)
		}
		found += len(want)
	}
	if found < 100 {
		t.Fatalf("only %d matches in the random texts: the test proves little", found)
	}
}

// TestHexChainWindowsAsWholeText checks that delimitedHexRE run in
// eachHexChain's windows finds what it finds on the whole text.
func TestHexChainWindowsAsWholeText(t *testing.T) {
	parts := []string{"41", "4b", "fF", "0", "g", "_", "x", ":", "-", ".", ",", " ", "\n", "é",
		"41:42:43:44:45:46:47:48:49:4a:4b", "50-51-52-53-54-55-56-57-58-59-5a-5b-5c"}
	r := rand.New(rand.NewPCG(7, 8))
	found := 0
	for n := 0; n < 20000; n++ {
		var b strings.Builder
		for k := r.IntN(30); k > 0; k-- {
			b.WriteString(parts[r.IntN(len(parts))])
		}
		text := b.String()
		want := delimitedHexRE.FindAllStringSubmatchIndex(text, -1)
		var got [][]int
		eachHexChain(text, func(ws, we int) {
			for _, m := range delimitedHexRE.FindAllStringSubmatchIndex(text[ws:we], -1) {
				for i := range m {
					if m[i] >= 0 {
						m[i] += ws
					}
				}
				got = append(got, m)
			}
		})
		if !slices.EqualFunc(want, got, slices.Equal) {
			t.Fatalf("%q: whole text %v, windows %v", text, want, got)
		}
		found += len(want)
	}
	if found < 100 {
		t.Fatalf("only %d matches in the random texts", found)
	}
}

// TestCardWindowsAsWholeText checks that cardRE run in eachCardWindow's
// windows finds what it finds on the whole text.
func TestCardWindowsAsWholeText(t *testing.T) {
	parts := []string{"4111111111111111", "4111 1111 1111 1111", "1234567", "0", " ", "-", ".", ",", "a", "_", "\n", ".x", "..", "9"}
	r := rand.New(rand.NewPCG(9, 10))
	found := 0
	for n := 0; n < 20000; n++ {
		var b strings.Builder
		for k := r.IntN(12); k > 0; k-- {
			b.WriteString(parts[r.IntN(len(parts))])
		}
		text := b.String()
		want := cardRE.FindAllStringSubmatchIndex(text, -1)
		var got [][]int
		eachCardWindow(text, func(ws, we int) {
			for _, m := range cardRE.FindAllStringSubmatchIndex(text[ws:we], -1) {
				for i := range m {
					if m[i] >= 0 {
						m[i] += ws
					}
				}
				got = append(got, m)
			}
		})
		if !slices.EqualFunc(want, got, slices.Equal) {
			t.Fatalf("%q: whole text %v, windows %v", text, want, got)
		}
		found += len(want)
	}
	if found < 100 {
		t.Fatalf("only %d matches in the random texts", found)
	}
}
