package scanner

import (
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// encUnicode names the layer that reads text as its reader sees it:
// without what does not show, and with lookalike letters as the ASCII they
// look like.
const encUnicode = "unicode"

// foldUnicodeLines is s as a reader who sees only what shows would read
// it, which is how a sender hides a token from a pattern and its receiver
// gets it back with one call to a normalizer:
//   - zero-width and other format characters (U+200B, U+200D, U+2060,
//     U+FEFF, U+00AD, bidi controls…) dropped, and combining marks after
//     an ASCII character (a token with one between every few characters
//     reads whole again);
//   - the two ways of writing text that does not show at all spelled out:
//     Unicode tag characters (U+E0020…U+E007E, "ASCII smuggling") as the
//     ASCII they shadow, and variation selectors (U+FE00…U+FE0F,
//     U+E0100…U+E01EF), which carry a byte each after a visible
//     character, as that byte when it is printable ASCII;
//   - letters and digits that NFKC makes ASCII (fullwidth, mathematical
//     bold and italic, circled, superscript, ligatures), and punctuation
//     so made next to a letter or digit;
//   - letters that look like Latin ones (latinLookalike: Cyrillic, Greek,
//     Armenian, Cherokee, IPA, small capitals) next to a letter or digit,
//     and Latin letters with accents in a word that holds an ASCII digit:
//     a token's word, not prose in Russian or French (the other two-byte
//     runes NFKC folds, ſ, ĳ and modifier letters, in a line that holds
//     one).
//
// It gives the lines that change, one per line, as decodeLines gives its
// layers: a long text with one emoji joined by a ZWJ is not read twice
// whole. Without lookalikes those letters are not read (features found
// no letter beside a byte from 0x80: prose in those scripts); the
// two-byte runes that NFKC folds are read in a line with an ASCII digit
// (a token's line, not prose in French). Either way such prose costs a
// table lookup a byte.
func foldUnicodeLines(s string, lookalikes bool) (string, bool) {
	var which int
	if lookalikes {
		which |= leadLookalikes
	}
	lead, noLatin := &foldLeads[which|leadLatinNFKC], &foldLeads[which]
	folds := bmpFolds()
	var parts []string
	for ls := 0; ls < len(s); {
		le := len(s)
		if j := strings.IndexByte(s[ls:], '\n'); j >= 0 {
			le = ls + j
		}
		line := s[ls:le]
		t := noLatin
		if hasDigit(line) {
			t = lead
		}
		if i := quietUntil(line, 0, t, folds); i < len(line) {
			if d, ok := foldUnicode(line, i, t, folds); ok {
				parts = append(parts, d)
			}
		}
		ls = le + 1
	}
	return layerOfLines(parts)
}

// foldUnicode folds the line s from its byte from on (the bytes before it have
// no class in lead), with lead as foldUnicodeLines chose it and folds from
// bmpFolds; ok is false when nothing in it folds.
func foldUnicode(s string, from int, lead *[256]uint8, folds *bmpFoldTable) (string, bool) {
	var b strings.Builder
	last := 0        // s[last:] is not yet written
	var written byte // the last byte written to b
	wordEnd, wordDigit := -1, false
	for i := from; ; {
		if i = quietUntil(s, i, lead, folds); i == len(s) {
			break
		}
		class := lead[s[i]]
		prev := written
		if i > last {
			prev = s[i-1]
		}
		if class == foldsLookalike && i+2 < len(s) && !tokenBytes[prev] && !tokenBytes[s[i+2]] && s[i+1]&0xC0 == 0x80 {
			// A Cyrillic or Greek letter (two bytes) that is not beside a
			// token's byte, as in prose.
			i += 2
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		var f runeFoldEntry
		if int(r) < len(folds) {
			f = folds[r]
		} else {
			f = foldOf(r)
		}
		var next byte
		if i+size < len(s) {
			next = s[i+size]
		}
		var as string
		switch f.kind {
		case foldKeep:
			i += size
			continue
		case foldDrop:
		case foldSpell, foldCompat:
			as = asciiByte[f.ascii : f.ascii+1]
		case foldMark:
			if prev == 0 || prev >= utf8.RuneSelf {
				i += size
				continue
			}
		case foldLookalike, foldPunct:
			if !tokenBytes[prev] && !tokenBytes[next] {
				i += size
				continue
			}
			as = asciiByte[f.ascii : f.ascii+1]
		case foldAccent:
			if i >= wordEnd {
				wordEnd, wordDigit = wordAround(s, i)
			}
			if !wordDigit {
				i += size
				continue
			}
			as = asciiByte[f.ascii : f.ascii+1]
		case foldCompatMulti:
			d := norm.NFKC.PropertiesString(s[i:]).Decomposition()
			as = string(d[:asciiPrefix(d)])
		}
		if b.Len() == 0 {
			b.Grow(len(s))
		}
		b.WriteString(s[last:i])
		b.WriteString(as)
		if b.Len() > 0 {
			written = b.String()[b.Len()-1]
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

// quietUntil is the first byte of s from i on with a class in lead, or
// len(s): the loop of prose, kept apart from the folding's variables. A
// rune of three bytes that never folds (kana, CJK's full stop) is passed
// over by its table entry.
func quietUntil(s string, i int, lead *[256]uint8, folds *bmpFoldTable) int {
	for ; i < len(s); i++ {
		c := s[i]
		if lead[c] == 0 {
			continue
		}
		if c >= 0xE0 && c < 0xF0 && i+2 < len(s) && s[i+1]&0xC0 == 0x80 && s[i+2]&0xC0 == 0x80 {
			r := rune(c&0x0F)<<12 | rune(s[i+1]&0x3F)<<6 | rune(s[i+2]&0x3F)
			if folds[r].kind == foldKeep {
				i += 2
				continue
			}
		}
		return i
	}
	return i
}

// A rune's fold: what it reads as, and when.
type foldKind uint8

const (
	foldKeep        foldKind = iota // reads as itself
	foldDrop                        // a format character or variation selector: never shows
	foldSpell                       // a tag or variation selector that carries ascii
	foldMark                        // a combining mark: dropped after an ASCII character
	foldCompat                      // NFKC makes it the letter or digit ascii
	foldCompatMulti                 // NFKC makes it several letters and digits (a ligature)
	foldPunct                       // NFKC makes it the punctuation ascii: so read beside a letter or digit
	foldLookalike                   // a Cyrillic or Greek letter that looks like ascii: so read beside a letter or digit
	foldAccent                      // a Latin letter with accents: ascii in a word with a digit
)

type runeFoldEntry struct {
	kind  foldKind
	ascii byte
}

// bmpFoldTable is foldOf for every rune of the Basic Multilingual Plane,
// so that the layer asks the normalizer nothing.
type bmpFoldTable [0x10000]runeFoldEntry

// bmpFolds is the table, built on the first text with a byte from 0x80
// (3.4 ms here) and held for the process.
var bmpFolds = sync.OnceValue(func() *bmpFoldTable {
	var t bmpFoldTable
	for r := rune(utf8.RuneSelf); r < 0x10000; r++ {
		var b [utf8.UTFMax]byte
		utf8.EncodeRune(b[:], r)
		if foldLead[b[0]] != 0 {
			t[r] = foldOf(r)
		}
	}
	return &t
})

// foldOf is how r folds (see foldUnicodeLines).
func foldOf(r rune) runeFoldEntry {
	if !utf8.ValidRune(r) {
		return runeFoldEntry{}
	}
	if c, ok := invisibleAs(r); ok {
		if c == 0 {
			return runeFoldEntry{kind: foldDrop}
		}
		return runeFoldEntry{foldSpell, c}
	}
	if unicode.In(r, unicode.Mn, unicode.Me) {
		return runeFoldEntry{kind: foldMark}
	}
	if c, ok := latinLookalike[r]; ok {
		return runeFoldEntry{foldLookalike, c}
	}
	var b [utf8.UTFMax]byte
	d := norm.NFKC.Properties(b[:utf8.EncodeRune(b[:], r)]).Decomposition()
	n := asciiPrefix(d)
	switch {
	case n == 0 || !allMarks(d[n:]):
		return runeFoldEntry{}
	case n < len(d):
		if n == 1 && tokenBytes[d[0]] {
			return runeFoldEntry{foldAccent, d[0]}
		}
		return runeFoldEntry{}
	case n == 1 && tokenBytes[d[0]]:
		return runeFoldEntry{foldCompat, d[0]}
	case n == 1:
		return runeFoldEntry{foldPunct, d[0]}
	}
	for _, c := range d {
		if !tokenBytes[c] { // an ellipsis or "1/2": no token is made of them
			return runeFoldEntry{}
		}
	}
	return runeFoldEntry{kind: foldCompatMulti}
}

// wordAround is where the word around s[i] ends and whether it holds an
// ASCII digit; a word ends at a space or a quote.
func wordAround(s string, i int) (end int, digit bool) {
	for j := i - 1; j >= 0 && !wordBreak(s[j]); j-- {
		digit = digit || s[j] >= '0' && s[j] <= '9'
	}
	for end = i; end < len(s) && !wordBreak(s[end]); end++ {
		digit = digit || s[end] >= '0' && s[end] <= '9'
	}
	return end, digit
}

func wordBreak(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '"' || c == '\''
}

// asciiByte holds every byte value at its own index, so that a one-byte
// string is a slice of it rather than an allocation.
var asciiByte = func() string {
	var b [utf8.RuneSelf]byte
	for i := range b {
		b[i] = byte(i)
	}
	return string(b[:])
}()

// tokenBytes has the letters, digits and underscore, the bytes of which
// tokens are mostly made.
var tokenBytes = func() (t [256]bool) {
	for c := range utf8.RuneSelf {
		t[c] = isWordByte(byte(c))
	}
	return t
}()

// asciiPrefix is how many leading bytes of d are printable ASCII other
// than a space.
func asciiPrefix(d []byte) int {
	n := 0
	for n < len(d) && d[n] > ' ' && d[n] < utf8.RuneSelf {
		n++
	}
	return n
}

// allMarks reports whether d is combining marks alone (an accent that a
// decomposition puts after its letter).
func allMarks(d []byte) bool {
	for len(d) > 0 {
		r, size := utf8.DecodeRune(d)
		if !unicode.Is(unicode.Mn, r) {
			return false
		}
		d = d[size:]
	}
	return true
}

// latinLookalike is the letters of other scripts (Cyrillic, Greek,
// Armenian, Cherokee) and Latin's own odd ones (IPA, small capitals) that
// look like a Latin letter in most fonts, as that letter.
var latinLookalike = map[rune]byte{
	// Cyrillic
	'а': 'a', 'с': 'c', 'ԁ': 'd', 'е': 'e', 'һ': 'h', 'і': 'i', 'ј': 'j', 'ӏ': 'l', 'о': 'o',
	'р': 'p', 'ԛ': 'q', 'ѕ': 's', 'ԝ': 'w', 'х': 'x', 'у': 'y',
	'А': 'A', 'В': 'B', 'С': 'C', 'Е': 'E', 'Н': 'H', 'І': 'I', 'Ј': 'J', 'К': 'K', 'М': 'M',
	'О': 'O', 'Р': 'P', 'Ԛ': 'Q', 'Ѕ': 'S', 'Т': 'T', 'Ԝ': 'W', 'Х': 'X', 'Ү': 'Y',
	// Greek
	'α': 'a', 'ι': 'i', 'ν': 'v', 'ο': 'o', 'ρ': 'p', 'υ': 'u', 'γ': 'y',
	'Α': 'A', 'Β': 'B', 'Ε': 'E', 'Ζ': 'Z', 'Η': 'H', 'Ι': 'I', 'Κ': 'K', 'Μ': 'M', 'Ν': 'N',
	'Ο': 'O', 'Ρ': 'P', 'Τ': 'T', 'Υ': 'Y', 'Χ': 'X',
	// Latin's own: IPA letters, dotless i and j, small capitals
	'ɑ': 'a', 'ɡ': 'g', 'ı': 'i', 'ȷ': 'j', 'ɩ': 'i',
	'ᴀ': 'A', 'ʙ': 'B', 'ᴄ': 'C', 'ᴅ': 'D', 'ᴇ': 'E', 'ɢ': 'G', 'ʜ': 'H', 'ɪ': 'I', 'ᴊ': 'J', 'ᴋ': 'K',
	'ʟ': 'L', 'ᴍ': 'M', 'ɴ': 'N', 'ᴏ': 'O', 'ᴘ': 'P', 'ʀ': 'R', 'ꜱ': 'S', 'ᴛ': 'T', 'ᴜ': 'U', 'ᴠ': 'V',
	'ᴡ': 'W', 'ʏ': 'Y', 'ᴢ': 'Z',
	// Armenian
	'օ': 'o', 'ս': 'u', 'հ': 'h', 'ո': 'n', 'ց': 'g', 'զ': 'q',
	// Cherokee
	'Ꭺ': 'A', 'Ᏼ': 'B', 'Ꮯ': 'C', 'Ꭼ': 'E', 'Ꮋ': 'H', 'Ꭻ': 'J', 'Ꮶ': 'K', 'Ꮇ': 'M', 'Ꮲ': 'P', 'Ꮪ': 'S',
	'Ꭲ': 'T', 'Ꮃ': 'W', 'Ꮓ': 'Z',
}

// nfkcASCIILead is the first bytes of the UTF-8 of every rune whose NFKC
// decomposition is ASCII, or ASCII and accents (TestFoldLead computes
// them: 27 ms is too long to do so at start).
const nfkcASCIILead = "\xc2\xc3\xc4\xc5\xc6\xc7\xc8\xca\xcb\xcd\xe1\xe2\xe3\xea\xef\xf0"

// What foldUnicode may find in a rune whose UTF-8 starts with a byte.
const (
	foldsInvisible uint8 = 1 << iota // a format character, tag or variation selector
	foldsMark                        // a combining mark
	foldsLookalike                   // a letter that looks Latin
	foldsNFKC                        // NFKC makes it ASCII
)

// foldLead has, for the first bytes of the UTF-8 of the runes foldOf
// folds, what they may be; 0 for the others: text in most scripts (CJK's
// E4 to E9, Arabic's D8 to DB…) is passed over a byte at a time without
// decoding its runes, Cyrillic's a letter at a time.
var foldLead = func() (t [256]uint8) {
	mark := func(lo, hi, stride rune, class uint8) {
		for r := lo; r <= hi; r += stride {
			var b [utf8.UTFMax]byte
			utf8.EncodeRune(b[:], r)
			t[b[0]] |= class
		}
	}
	for table, class := range map[*unicode.RangeTable]uint8{unicode.Cf: foldsInvisible, unicode.Mn: foldsMark, unicode.Me: foldsMark} {
		for _, r := range table.R16 {
			mark(rune(r.Lo), rune(r.Hi), rune(r.Stride), class)
		}
		for _, r := range table.R32 {
			mark(rune(r.Lo), rune(r.Hi), rune(r.Stride), class)
		}
	}
	mark(0xFE00, 0xFE0F, 1, foldsInvisible)
	mark(0xE0100, 0xE01EF, 1, foldsInvisible)
	mark(0xE0020, 0xE007E, 1, foldsInvisible)
	for r := range latinLookalike {
		mark(r, r, 1, foldsLookalike)
	}
	for _, c := range []byte(nfkcASCIILead) {
		t[c] |= foldsNFKC
	}
	return t
}()

// foldLeads is foldLead for a text (a line) as foldUnicode has it: with
// the lookalike letters when features found a letter beside a
// byte from 0x80 (leadLookalikes), and with the two-byte runes NFKC folds
// (Latin letters with accents, ſ, ĳ, modifier letters) when the line holds
// an ASCII digit (leadLatinNFKC). Prose in Russian, or in French without
// a number, costs a table lookup a rune.
var foldLeads = func() (t [4][256]uint8) {
	for which := range t {
		for c, class := range foldLead {
			if which&leadLookalikes == 0 {
				class &^= foldsLookalike
			}
			if which&leadLatinNFKC == 0 && c < 0xE0 {
				class &^= foldsNFKC
			}
			t[which][c] = class
		}
	}
	return t
}()

const (
	leadLookalikes = 1 << iota
	leadLatinNFKC
)

// hasDigit reports whether s holds an ASCII digit.
func hasDigit(s string) bool {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		// A digit's byte XOR '0' is below 10: the borrow of subtracting 10
		// sets its high bit (and only a byte below 10 is the first to).
		x := load8le(s[i:i+8]) ^ 0x3030303030303030
		if (x-0x0A0A0A0A0A0A0A0A)&^x&hiBits != 0 {
			return true
		}
	}
	for ; i < len(s); i++ {
		if s[i]-'0' < 10 {
			return true
		}
	}
	return false
}

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
