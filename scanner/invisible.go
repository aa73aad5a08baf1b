package scanner

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// encInvisible names the layer that shows what invisible characters hide.
const encInvisible = "invisible"

// revealInvisible is s as a reader who strips what does not show would
// have it: zero-width and other format characters (U+200B, U+200D, U+2060,
// U+FEFF, U+00AD, bidi controls…) dropped, so that a token with one
// between every few characters reads whole again; and the two ways of
// writing text that does not show at all spelled out: Unicode tag
// characters (U+E0020…U+E007E, "ASCII smuggling") as the ASCII they
// shadow, and variation selectors (U+FE00…U+FE0F, U+E0100…U+E01EF), which
// carry a byte each after a visible character, as that byte when it is
// printable ASCII. ok is false when s holds none of them.
func revealInvisible(s string) (string, bool) {
	var b strings.Builder
	last := 0 // s[last:] is not yet written
	for i := 0; i < len(s); {
		if !invisibleLead[s[i]] {
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		keep, ok := invisibleAs(r)
		if !ok {
			i += size
			continue
		}
		if b.Len() == 0 {
			b.Grow(len(s))
		}
		b.WriteString(s[last:i])
		if keep != 0 {
			b.WriteByte(keep)
		}
		i += size
		last = i
	}
	if last == 0 {
		return "", false
	}
	b.WriteString(s[last:])
	return b.String(), true
}

// revealInvisibleLines is revealInvisible for the lines of s that hold an
// invisible character, one per line, as decodeLines gives its layers: a
// long text with one emoji joined by a ZWJ is not read twice whole.
func revealInvisibleLines(s string) (string, bool) {
	var parts []string
	for ls := 0; ls < len(s); {
		le := len(s)
		if j := strings.IndexByte(s[ls:], '\n'); j >= 0 {
			le = ls + j
		}
		if d, ok := revealInvisible(s[ls:le]); ok {
			parts = append(parts, d)
		}
		ls = le + 1
	}
	return layerOfLines(parts)
}

// invisibleLead has the first bytes of the UTF-8 of the runes invisibleAs
// knows (unicode.Cf's ranges and the variation selectors): text in most
// scripts (CJK's E3 to ED, Cyrillic's D0 and D1…) is passed over a byte
// at a time without decoding its runes.
var invisibleLead = func() (t [256]bool) {
	mark := func(lo, hi, stride rune) {
		for r := lo; r <= hi; r += stride {
			var b [utf8.UTFMax]byte
			utf8.EncodeRune(b[:], r)
			t[b[0]] = true
		}
	}
	for _, r := range unicode.Cf.R16 {
		mark(rune(r.Lo), rune(r.Hi), rune(r.Stride))
	}
	for _, r := range unicode.Cf.R32 {
		mark(rune(r.Lo), rune(r.Hi), rune(r.Stride))
	}
	mark(0xFE00, 0xFE0F, 1)
	mark(0xE0100, 0xE01EF, 1)
	return t
}()

// invisibleAs is what an invisible rune r stands for: an ASCII byte, or 0
// for nothing; ok is false for a rune that shows.
func invisibleAs(r rune) (byte, bool) {
	switch {
	case r >= 0xE0020 && r <= 0xE007E: // tags
		return byte(r - 0xE0000), true
	case r >= 0xFE00 && r <= 0xFE0F: // variation selectors 1-16: bytes 0-15
		return 0, true
	case r >= 0xE0100 && r <= 0xE01EF: // variation selectors 17-256: bytes 16-255
		if v := r - 0xE0100 + 16; v >= 0x20 && v <= 0x7E {
			return byte(v), true
		}
		return 0, true
	case unicode.Is(unicode.Cf, r):
		return 0, true
	}
	return 0, false
}
