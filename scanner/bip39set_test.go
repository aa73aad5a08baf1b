package scanner

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestBIP39Set checks the packed table against the wordlist map, both ways.
func TestBIP39Set(t *testing.T) {
	idx := bip39Words()
	for w := range idx {
		if !bip39Fast.has(w) {
			t.Fatalf("%q not in the packed set", w)
		}
	}
	for _, w := range []string{"", "ab", "abandonx", "abando", "Abandon", "zoo ", "zooo", "the", "abandonment", "zz"} {
		if _, in := idx[w]; bip39Fast.has(w) != in {
			t.Fatalf("%q: packed set says %v, the wordlist %v", w, !in, in)
		}
	}
}

// TestWordsFeatureCoversMnemonics: the prefilter's fWords mark is set on
// every text where mnemonics finds a phrase (it must not cost recall), and
// not on prose that has no run of twelve wordlist words.
func TestWordsFeatureCoversMnemonics(t *testing.T) {
	m := fakeMnemonic(16)
	r := rand.New(rand.NewPCG(3, 4))
	seps := []string{" ", "\n", "  ", "\t", ".", ",", "5", "X", "é", "\"", "Abandon ", "the ", "zoo "}
	phrases := 0
	for n := 0; n < 5000; n++ {
		var b strings.Builder
		for k := r.IntN(6); k > 0; k-- {
			b.WriteString(seps[r.IntN(len(seps))])
			if r.IntN(3) == 0 {
				b.WriteString(m)
			}
		}
		text := b.String()
		if len(mnemonics(text)) > 0 {
			phrases++
			if features(text)&fWords == 0 {
				t.Fatalf("%q: mnemonics finds a phrase, fWords is not set", text)
			}
		}
	}
	if phrases < 100 {
		t.Fatalf("only %d texts with a phrase", phrases)
	}
	prose := strings.Repeat("the quick brown fox jumps over the lazy dog and then some more words follow here ", 50)
	if features(prose)&fWords != 0 {
		t.Fatal("fWords on prose")
	}
}

// TestWordsSpanHoldsPhrases: mnemonics reads the same phrases in the spans
// that featureScan gives as in the whole text, and fWords is set exactly
// when there is one.
func TestWordsSpanHoldsPhrases(t *testing.T) {
	m := fakeMnemonic(16)
	r := rand.New(rand.NewPCG(5, 6))
	seps := []string{" ", "\n", ".", "5", "X", "é", "abandon ", "zoo ", "the ", "able", "Zoo "}
	found := 0
	for n := 0; n < 5000; n++ {
		var b strings.Builder
		for k := r.IntN(8); k > 0; k-- {
			b.WriteString(seps[r.IntN(len(seps))])
			if r.IntN(3) == 0 {
				b.WriteString(m)
			}
		}
		text := b.String()
		want := mnemonics(text)
		f, spans := featureScan(text)
		var got []string
		for _, sp := range spans {
			got = append(got, mnemonics(text[sp[0]:sp[1]])...)
		}
		if !slices.Equal(want, got) || (f&fWords != 0) != (len(want) > 0) {
			t.Fatalf("%q: whole text %q, spans %v %q, fWords %v", text, want, spans, got, f&fWords != 0)
		}
		found += len(want)
	}
	if found < 100 {
		t.Fatalf("only %d phrases", found)
	}
}

// TestCryptoMarksCoverTheirDetectors: each crypto detector's prefilter mark
// is set on every text where the detector's own scan finds a candidate.
func TestCryptoMarksCoverTheirDetectors(t *testing.T) {
	parts := []string{"5HueCGU8rMjxEXxiPuD5BDku4MkFqeZyd4dZ1jvhTVqvbTLvyTJ", "1BoatSLRHtKNngkdXEeobR76b6LR",
		"0x", "0X", "bc1", "BC1", "tb1", "key", "Key", "KEY", "kEy", strings.Repeat("0a1B", 8), " ", "\n", "é", "_", "-", "O", "l", "0", "I", "9"}
	r := rand.New(rand.NewPCG(11, 12))
	for n := 0; n < 20000; n++ {
		var b strings.Builder
		for k := r.IntN(10); k > 0; k-- {
			b.WriteString(parts[r.IntN(len(parts))])
		}
		text := b.String()
		f := features(text)
		b58 := false
		eachBase58Token(text, func(int, int) { b58 = true })
		for _, c := range []struct {
			name string
			has  bool
			mark uint32
		}{
			{"base58", b58, fBase58},
			{"eth", containsAny(text, "0x", "0X"), fEth},
			{"bech32", containsAny(text, "bc1", "tb1", "BC1", "TB1"), fBech32},
			{"hex key", hasHexRun(text, minHexKeyRun), fLongRun},
		} {
			if c.has && f&c.mark == 0 {
				t.Fatalf("%q: %s candidate without its mark", text, c.name)
			}
		}
	}
}
