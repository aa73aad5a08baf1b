package scanner

import "math/bits"

// Features of a text that the own detectors need, found in one pass, so
// that a detector whose marks are absent does not read the text at all.
const (
	fCardDigits   = 1 << iota // 13 digits close together
	fIBAN                     // two capitals and two digits
	fBase58                   // a 26-112 character word of base58 digits
	fKeyShape                 // a provider prefix: gh?_ sk- k_live_ SG. glpat- xox?-
	fJWT                      // eyJ
	fEth                      // 0x
	fBech32                   // bc1, tb1
	fLongRun                  // minHexKeyRun base64 bytes in a row: a hex private key may be there
	fAssign                   // = or :
	fPercent                  // %2525
	fDelimHex                 // hex bytes split by a delimiter
	fWords                    // a BIP-39 phrase: 12 to 24 wordlist words in a row with its checksum
	fB64Run                   // minBase64Run base64 or base64url bytes in a row: encodedRuns may find one
	fAnyPercent               // a %: percent-encoding may be there
	fAnyBackslash             // a \: escapes may be there
	fAnyHigh                  // a byte from 0x80: Unicode may hide a token there
	fMixedScript              // a letter, digit or _ beside a byte from 0x80: a token may hold a lookalike letter
	fSpelled                  // single letters and digits evenly apart: a text spelled out (spelledRuns)
	fNumberList               // many numbers of two or three digits: character codes may be there (charCodeRuns)
	fDigits                   // a block of 64 bytes half digits: binary codes may be there (binaryRuns)
)

// Byte classes for features.
const (
	clOther = iota
	clLower
	clSpace
	clDigit
	clUpper
	clPunct // a byte some mark starts or ends with
)

var byteClass = func() (t [256]uint8) {
	for c := 'a'; c <= 'z'; c++ {
		t[c] = clLower
	}
	for c := 'A'; c <= 'Z'; c++ {
		t[c] = clUpper
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = clDigit
	}
	t[' '], t['\n'], t['\t'], t['\r'] = clSpace, clSpace, clSpace, clSpace
	for _, c := range "=:_-.%," {
		t[c] = clPunct
	}
	return t
}()

// features reports which of the marks above text holds.
func features(s string) uint32 {
	return scanFeatures(s).f
}

// featureMarks is what scanFeatures finds: the marks, and where in the
// text two detectors that would otherwise read it all again are to look.
type featureMarks struct {
	f       uint32
	phrases [][2]int // when fWords: the spans that hold the phrases
	words58 [][2]int // when fBase58: the words eachBase58Token gives
	// When fSpelled, fNumberList and fDigits: from the first block with the
	// mark to the end of the last (spelledRuns, charCodeRuns and binaryRuns
	// read around it).
	spelled, numbers, digits [2]int
}

// featureScan is features and, when fWords is set, the spans of s that
// hold the phrases: each starts and ends where mnemonics cuts a run, so
// that mnemonics reads the same runs in them as in s.
func featureScan(s string) (f uint32, phrases [][2]int) {
	m := scanFeatures(s)
	return m.f, m.phrases
}

// scanFeatures is featureScan, and the base58 words.
//
// Where the CPU classifies 64 bytes at once (featureMasks), it drives the
// scan from those classes (scanFeatureMasks); a short text, or a CPU
// without the instructions, takes the byte loop. Both give the same marks.
func scanFeatures(s string) featureMarks {
	if useFeatureMasks && len(s) >= featureMasksMin {
		return scanFeatureMasks(s)
	}
	return scanFeatureBytes(s)
}

// featureMasksMin is the shortest text worth the block classes: below it,
// setting up the blocks costs more than the byte loop.
const featureMasksMin = 64

// scanFeatureBytes is scanFeatures byte by byte.
//
// It is the scanner's per-byte pass for the own detectors, so its common
// bytes take short paths: a run of lower-case letters is found eight bytes
// at a time, and what a word needs checking for (base58 digits, wordlist
// words) is checked only when the word or run it belongs to is long
// enough to matter, which in prose is rare.
func scanFeatureBytes(s string) featureMarks {
	var f uint32
	// The counters of the loop are its own locals (no closure shares them),
	// so that they stay in registers; the wordlist run, touched once a
	// word, lives in wr.
	digits := 0 // digits in a row (spaces and dashes allowed between)
	word := 0   // letters and digits in a row
	// Words as mnemonics reads them: runs of letters (ASCII and any byte
	// from 0x80) split by white space; a run of wordlist words is cut by
	// any other word or byte.
	letters := 0      // letters in the current word
	lowerOnly := true // the current word is all lower-case ASCII
	b64 := 0          // base64 and base64url bytes in a row
	wr := wordRun{s: s, set: bip39Words39()}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isLowerASCII(c) {
			// The run's end, eight bytes at a time, written out here: a
			// call would spill the loop's counters.
			j := i + 1
			for j+8 <= len(s) {
				if m := ^lowerBytes(load8le(s[j:j+8])) & hiBits; m != 0 {
					j += bits.TrailingZeros64(m) / 8
					break
				}
				j += 8
			}
			for j < len(s) && isLowerASCII(s[j]) {
				j++
			}
			letters += j - i
			word += j - i
			b64 += j - i
			digits = 0
			if j < len(s) && s[j] == ' ' {
				// The commonest end of a word, taken here as the clSpace
				// case takes it, without a call.
				if lowerOnly && uint(letters-3) <= 8-3 && wr.set.maybe(packedBefore(s, j, letters)) {
					wr.run++
				} else {
					wr.cutAt(j)
				}
				letters, lowerOnly = 0, true
				if word >= 26 {
					wr.base58(j, word)
				}
				f |= b64Run(b64)
				word, b64 = 0, 0
				i = j
				continue
			}
			i = j - 1
			continue
		}
		switch byteClass[c] {
		case clSpace:
			if letters > 0 {
				wr.endLetters(i, letters, lowerOnly)
				letters, lowerOnly = 0, true
			}
			if word >= 26 {
				wr.base58(i, word)
			}
			f |= b64Run(b64)
			word, b64 = 0, 0
			if c != ' ' { // a space may stand between digit groups
				digits = 0
			}
			continue
		case clDigit:
			if digits++; digits >= 13 {
				f |= fCardDigits
			}
			word++
			b64++
			if c == '0' && i+1 < len(s) && s[i+1]|0x20 == 'x' {
				f |= fEth
			}
			if c == '1' && i >= 2 && (s[i-2]|0x20 == 'b' && s[i-1]|0x20 == 'c' || s[i-2]|0x20 == 't' && s[i-1]|0x20 == 'b') {
				f |= fBech32
			}
			if letters > 0 {
				wr.endLetters(i, letters, lowerOnly)
				letters, lowerOnly = 0, true
			}
			wr.cutAt(i)
			if i+7 < len(s) {
				delimitedHexAt(s, i, &f)
			}
			continue
		case clUpper:
			word++
			b64++
			if c == 'J' && i >= 2 && s[i-2] == 'e' && s[i-1] == 'y' {
				f |= fJWT
			}
			if i+3 < len(s) && byteClass[s[i+1]] == clUpper && byteClass[s[i+2]] == clDigit && byteClass[s[i+3]] == clDigit {
				f |= fIBAN
			}
			letters++
			lowerOnly = false
			digits = 0
			continue
		case clPunct:
			switch c {
			case '=', ':':
				f |= fAssign
			case '_':
				if i >= 3 && s[i-3] == 'g' && s[i-2] == 'h' || i >= 1 && s[i-1] == 'k' {
					f |= fKeyShape
				}
			case '-':
				if i >= 2 && s[i-2] == 's' && s[i-1] == 'k' || i >= 5 && s[i-5:i] == "glpat" || i >= 4 && s[i-4:i-1] == "xox" {
					f |= fKeyShape
				}
			case '.':
				if i >= 2 && s[i-2] == 'S' && s[i-1] == 'G' {
					f |= fKeyShape
				}
			case '%':
				f |= fAnyPercent
				if i+4 < len(s) && s[i+1:i+5] == "2525" {
					f |= fPercent
				}
			}
		}
		if c == '\\' {
			f |= fAnyBackslash
		}
		// Any other byte ends words and digit runs.
		if c != '-' {
			digits = 0
		}
		if b64Chars[c] {
			b64++
		} else {
			f |= b64Run(b64)
			b64 = 0
		}
		if c >= 0x80 {
			f |= fAnyHigh
			if i > 0 && tokenBytes[s[i-1]] || i+1 < len(s) && tokenBytes[s[i+1]] {
				f |= fMixedScript
			}
			letters++
			lowerOnly = false
		} else {
			if letters > 0 {
				wr.endLetters(i, letters, lowerOnly)
				letters, lowerOnly = 0, true
			}
			wr.cutAt(i)
		}
		if word >= 26 {
			wr.base58(i, word)
		}
		word = 0
	}
	if word >= 26 {
		wr.base58(len(s), word)
	}
	f |= b64Run(b64)
	if letters > 0 {
		wr.endLetters(len(s), letters, lowerOnly)
	}
	wr.cut(len(s))
	if len(wr.phrases) > 0 {
		f |= fWords
	}
	if len(wr.words58) > 0 {
		f |= fBase58
	}
	m := featureMarks{phrases: wr.phrases, words58: wr.words58}
	spelledBytes(s, &m)
	m.f |= f
	return m
}

// markSpelled notes in m fSpelled and fNumberList for the block at base,
// from its isolated letters and digits (those with no letter or digit
// beside them) and the starts of its numbers of two or three digits
// between bytes that are neither. fSpelled: four or more times three
// isolated ones evenly 2 to 5 bytes apart, as a text spelled out a
// character at a time has a dozen in the block it is in ("g h p _",
// "g-h-p", `"g", "h"`), and prose and code rarely one. fNumberList: eight
// or more such numbers, as a list of character codes has ("103,104,112").
// fDigits: half the block's bytes digits (of which it has nd), as binary
// codes have ("01100111 01101000": eight in nine).
func (m *featureMarks) markSpelled(base int, iso, numbers uint64, nd int) {
	if nd >= 32 {
		m.digits = markSpan(m.digits, m.f&fDigits != 0, base)
		m.f |= fDigits
	}
	if bits.OnesCount64(iso) >= 6 { // four triples need six
		var three uint64
		for k := uint(2); k <= 5; k++ {
			three |= iso & (iso >> k) & (iso >> (2 * k))
		}
		if bits.OnesCount64(three) >= 4 {
			m.spelled = markSpan(m.spelled, m.f&fSpelled != 0, base)
			m.f |= fSpelled
		}
	}
	if bits.OnesCount64(numbers) >= 8 {
		m.numbers = markSpan(m.numbers, m.f&fNumberList != 0, base)
		m.f |= fNumberList
	}
}

// markSpan is span grown to the block at base.
func markSpan(span [2]int, had bool, base int) [2]int {
	if !had {
		span[0] = base
	}
	span[1] = base + 64
	return span
}

// spelledBytes is markSpelled for the blocks of s, byte by byte: the
// byte loop's way to fSpelled and fNumberList.
func spelledBytes(s string, m *featureMarks) {
	if len(s) < 11 { // six single characters one byte apart: the least a mark needs
		return
	}
	class := func(i int) uint8 {
		if i < 0 || i >= len(s) {
			return clOther
		}
		return byteClass[s[i]]
	}
	alnum := func(i int) bool {
		c := class(i)
		return c == clLower || c == clDigit || c == clUpper
	}
	digit := func(i int) bool { return class(i) == clDigit }
	for b := 0; b < len(s); b += 64 {
		var iso, numbers uint64
		nd := 0
		for i := b; i < min(b+64, len(s)); i++ {
			if alnum(i) && !alnum(i-1) && !alnum(i+1) {
				iso |= 1 << (i - b)
			}
			if digit(i) && !alnum(i-1) && digit(i+1) && (!alnum(i+2) || digit(i+2) && !alnum(i+3)) {
				numbers |= 1 << (i - b)
			}
			if digit(i) {
				nd++
			}
		}
		m.markSpelled(b, iso, numbers, nd)
	}
}

// base58 notes the word of letters and digits (at least 26 of them) that
// ends at end when it has a key's or address's length and only base58
// digits. The digits are checked here, not byte by byte in the loop: few
// words are this long.
func (w *wordRun) base58(end, word int) {
	if word > 112 {
		return
	}
	for _, c := range []byte(w.s[end-word : end]) {
		if base58Index[c] < 0 {
			return
		}
	}
	w.words58 = append(w.words58, [2]int{end - word, end})
}

// b64Run is fB64Run (and fLongRun) when a run of n base64 bytes ends.
func b64Run(n int) (f uint32) {
	if n >= minBase64Run {
		f |= fB64Run
		if n >= minHexKeyRun {
			f |= fLongRun
		}
	}
	return f
}

// wordRun is scanFeatures' run of words that may be wordlist words: runs
// of 3 to 8 lower-case letters split by white space, that the wordlist's
// bitmap does not rule out. Only a run of at least minPhraseWords of them
// can hold a phrase, so only such a run is looked up in the wordlist
// (phraseRuns), when it is cut; in prose, other words and punctuation cut
// nearly every run before that.
type wordRun struct {
	s        string
	set      *bip39Set
	run      int // such words in a row
	runStart int // where the run was last cut
	phrases  [][2]int
	words58  [][2]int // base58 words of 26 to 112 digits
}

// minPhraseWords is the fewest words of a BIP-39 phrase.
const minPhraseWords = 12

func (w *wordRun) cut(i int) {
	if w.run >= minPhraseWords {
		w.phrases = phraseRuns(w.s, w.runStart, i, w.phrases)
	}
	w.run, w.runStart = 0, i
}

// cutAt cuts the run at a byte that is no letter nor white space, cheaply
// when there is no run.
func (w *wordRun) cutAt(i int) {
	if w.run > 0 {
		w.cut(i)
	} else {
		w.runStart = i
	}
}

// endLetters ends the word of letters before i (letters > 0) at a byte
// that is no letter; the callers cut the run at any byte but white space.
func (w *wordRun) endLetters(i, letters int, lowerOnly bool) {
	if lowerOnly && uint(letters-3) <= 8-3 && w.set.maybe(packedBefore(w.s, i, letters)) { // 3 to 8 letters
		w.run++
		return
	}
	w.cutAt(i)
}

// phraseRuns appends the spans of s[from:to] that hold a checksummed
// phrase. s[from:to] is a run wordRun cut: words of letters split by
// white space, after the byte at from that cut the run before it (a
// letter only when from is 0). A run of wordlist words in it is cut by any other
// word, as mnemonics cuts it, and is a phrase when it has a phrase's
// length and checksum.
func phraseRuns(s string, from, to int, phrases [][2]int) [][2]int {
	set := bip39Words39()
	var idx [24]uint16
	run, start := 0, from
	for i := from; i < to; {
		if byteClass[s[i]] == clSpace || i == from && !isLetter(s[i]) {
			i++
			continue
		}
		j := i
		for j < to && byteClass[s[j]] != clSpace {
			j++
		}
		// A word that packs to a wordlist word's key is that word: all
		// lower-case letters.
		if n := j - i; uint(n-3) <= 8-3 {
			k := packedBefore(s, j, n)
			if v, in := set.index(k); in {
				if run < len(idx) {
					idx[run] = v
				}
				run++
				i = j
				continue
			}
		}
		phrases = phraseAt(idx[:], run, start, j, phrases)
		run, start = 0, j
		i = j
	}
	return phraseAt(idx[:], run, start, to, phrases)
}

// phraseAt appends [start, end] when the run of n wordlist words with
// the indices idx ending at end has a phrase's length and checksum.
func phraseAt(idx []uint16, n, start, end int, phrases [][2]int) [][2]int {
	switch n {
	case 12, 15, 18, 21, 24:
		if bip39ChecksumOf(idx[:n]) {
			phrases = append(phrases, [2]int{start, end})
		}
	}
	return phrases
}

// packedBefore is s[i-n:i] (1 to 8 bytes) packed as packWord packs it:
// one big-endian load of the eight bytes before i, masked, where there
// are eight.
func packedBefore(s string, i, n int) uint64 {
	if i < 8 {
		k, _ := packWord(s[i-n : i])
		return k
	}
	return load8(s[i-8:i]) & lowBytes[n&7]
}

// load8 is binary.BigEndian.Uint64 on the eight bytes of b, which the
// compiler makes one load.
func load8(b string) uint64 {
	_ = b[7]
	return uint64(b[7]) | uint64(b[6])<<8 | uint64(b[5])<<16 | uint64(b[4])<<24 |
		uint64(b[3])<<32 | uint64(b[2])<<40 | uint64(b[1])<<48 | uint64(b[0])<<56
}

// lowBytes[n] keeps the n low bytes of a word (all eight for 0, as n is 8).
var lowBytes = [8]uint64{^uint64(0), 0xff, 0xffff, 0xffffff, 0xffffffff, 0xffffffffff, 0xffffffffffff, 0xffffffffffffff}

// isLetter is a byte of a word as mnemonics reads words.
func isLetter(c byte) bool { return c >= 0x80 || c|0x20-'a' <= 'z'-'a' }

func isLowerASCII(c byte) bool { return c-'a' <= 'z'-'a' }

const (
	loBits = 0x0101010101010101
	hiBits = 0x8080808080808080
)

// lowerBytes has the high bit of each byte of x that is 'a' to 'z'. No
// byte's arithmetic borrows from the next: each is computed on its low
// seven bits with its high bit set (for >= 'a') or clear (for <= 'z').
func lowerBytes(x uint64) uint64 {
	ge := (x | hiBits) - 'a'*loBits
	le := ('z'|0x80)*loBits - x&^hiBits
	return ge & le &^ x & hiBits
}

// load8le is binary.LittleEndian.Uint64 on the eight bytes of b, which the
// compiler makes one load.
func load8le(b string) uint64 {
	_ = b[7]
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

// delimitedHexAt sets fDelimHex when three hex bytes split by one
// delimiter start at s[i] (i+7 < len(s)).
func delimitedHexAt(s string, i int, f *uint32) {
	d := s[i+2]
	if (d == '-' || d == ':' || d == '.' || d == ',' || d == ' ') && s[i+5] == d &&
		isHexByte[s[i+1]] && isHexByte[s[i+3]] && isHexByte[s[i+4]] && isHexByte[s[i+6]] && isHexByte[s[i+7]] {
		*f |= fDelimHex
	}
}
