package scanner

import (
	"math/bits"
	"unsafe"
)

// scanFeatureMasks is scanFeatureBytes driven by the classes of 64 bytes
// at a time (blockMasks): the counters of the byte loop are kept per
// block with a few mask operations, the marks are looked at only where
// the classes of the bytes around them fit, and wordlist words are looked
// up only in runs of words long enough to hold a phrase (words).
//
// A block's bytes past the end of s are zeros, which belong to no class:
// to the counters, a zero at len(s) ends the text as the byte loop ends it
// (a byte that ends every word and run), and the bytes after it change
// nothing. So len(s) is always inside the last block.
func scanFeatureMasks(s string) featureMarks { return scanMasks(s, false) }

// scanMasks is scanFeatureMasks, with the classes from featureMasksGo
// when inGo: the tests take both.
func scanMasks(s string, inGo bool) featureMarks {
	m := maskScan{s: s, wr: wordRun{s: s, set: bip39Words39()}}
	blocks := len(s)/64 + 1
	// Each block needs the classes of the blocks on either side (a mark
	// spans a few bytes): buf holds the block before a batch (none before
	// the text), the batch, and the block after it.
	var buf [maskBatch + 2]blockMasks
	classifyBlocks(s, 0, buf[1:2], inGo)
	for b := 0; b < blocks; {
		n := min(maskBatch, blocks-b)
		classifyBlocks(s, b+1, buf[2:n+2], inGo)
		for k := range n {
			m.block((b+k)*64, &buf[k], &buf[k+1], &buf[k+2])
		}
		buf[0], buf[1] = buf[n], buf[n+1]
		b += n
	}
	f := m.f
	if len(m.wr.phrases) > 0 {
		f |= fWords
	}
	if len(m.wr.words58) > 0 {
		f |= fBase58
	}
	return featureMarks{f: f | m.spelled.f, phrases: m.wr.phrases, words58: m.wr.words58,
		spelled: m.spelled.spelled, numbers: m.spelled.numbers, digits: m.spelled.digits}
}

// maskBatch is how many blocks the classifier does per call.
const maskBatch = 16

// blockMasks are the classes of a block's 64 bytes, bit i for byte i. The
// assembly writes the fields by offset: keep their order.
type blockMasks struct {
	lower, upper, digit uint64 // a-z, A-Z, 0-9
	space               uint64 // clSpace: ' ', '\n', '\t', '\r'
	blank               uint64 // ' ' alone, which may stand between digit groups
	high                uint64 // 0x80 and above: letters to mnemonics
	b64                 uint64 // b64Chars
	assign              uint64 // '=' and ':'
	dash, under         uint64 // '-', '_'
	dot, pct            uint64 // '.', '%'
	bslash              uint64 // '\\'
}

// classifyBlocks fills out with the classes of the blocks of s from first
// on; the last block is padded with zeros, and blocks past it are empty.
func classifyBlocks(s string, first int, out []blockMasks, inGo bool) {
	classify := func(p *byte, blocks int, out *blockMasks) {
		// Called, not chosen as a func value: what a func value is handed
		// escapes to the heap.
		if inGo {
			featureMasksGo(p, blocks, out)
		} else {
			featureMasks(p, blocks, out)
		}
	}
	full := max(0, min(len(out), len(s)/64-first))
	if full > 0 {
		classify(unsafe.StringData(s[first*64:]), full, &out[0])
	}
	for j := full; j < len(out); j++ {
		start := (first + j) * 64
		if start >= len(s) {
			out[j] = blockMasks{}
			continue
		}
		var tail [64]byte
		copy(tail[:], s[start:])
		classify(&tail[0], 1, &out[j])
	}
}

// maskScan is the state of scanFeatureMasks between blocks: the byte
// loop's counters as they are at a block's first byte.
type maskScan struct {
	s      string
	f      uint32
	wr     wordRun // its phrases and words58 (words finds the runs)
	digits int     // digits in a row (spaces and dashes allowed between)
	b64    int     // base64 bytes in a row
	word   int     // letters and digits in a row
	// The carries of the additions that carry a mark along a run of
	// bytes (see words), into the next block.
	carryLower, carrySpace, carryCont uint64
	// Of the chain of words the block starts in (see words): how many
	// are not known to be no candidate, after those resolve read (up to
	// read).
	pend, read int
	spelled    featureMarks // fSpelled, fNumberList and their spans
}

// before has bit i set when the byte k before byte i has class x, which is
// px in the block before.
func before(x, px uint64, k uint) uint64 { return x<<k | px>>(64-k) }

// after has bit i set when the byte k after byte i has class x, which is
// nx in the block after.
func after(x, nx uint64, k uint) uint64 { return x>>k | nx<<(64-k) }

// block scans the block at s[base:], between the blocks p and n.
func (m *maskScan) block(base int, p, c, n *blockMasks) {
	if c.assign != 0 {
		m.f |= fAssign
	}
	if c.pct != 0 {
		m.f |= fAnyPercent
	}
	if c.bslash != 0 {
		m.f |= fAnyBackslash
	}
	if c.high != 0 {
		m.f |= fAnyHigh
		tok, pTok, nTok := c.lower|c.upper|c.digit|c.under, p.lower|p.upper|p.digit|p.under, n.lower|n.upper|n.digit|n.under
		if c.high&(before(tok, pTok, 1)|after(tok, nTok, 1)) != 0 {
			m.f |= fMixedScript
		}
	}
	// Isolated letters and digits; only a block with six (or with 15
	// digits) may be marked, and few are: the rest is left out of line.
	al := c.lower | c.upper | c.digit
	iso := al &^ (al<<1 | (p.lower|p.upper|p.digit)>>63) &^ (al>>1 | (n.lower|n.upper|n.digit)<<63)
	if bits.OnesCount64(iso) >= 6 || bits.OnesCount64(c.digit) >= 15 {
		m.spelledBlock(base, p, c, n, al, iso)
	}
	if m.f&(fB64Run|fLongRun) != fB64Run|fLongRun {
		m.b64Runs(c.b64)
	}
	if m.f&fCardDigits == 0 {
		m.cardDigits(c)
	}
	m.marks(base, p, c, n)
	m.base58(base, c.lower|c.upper|c.digit)
	m.words(base, p, c)
}

// spelledBlock is markSpelled for the block at base, between the blocks p
// and n, whose letters and digits are al and isolated ones iso.
func (m *maskScan) spelledBlock(base int, p, c, n *blockMasks, al, iso uint64) {
	var numbers uint64
	nd := bits.OnesCount64(c.digit)
	if nd >= 15 { // eight numbers starting here: all but the last have two digits here
		pAl, nAl := p.lower|p.upper|p.digit, n.lower|n.upper|n.digit
		d := after(c.digit, n.digit, 1) &^ before(al, pAl, 1) & c.digit // a number's first two digits
		numbers = d&^after(al, nAl, 2) | d&after(c.digit, n.digit, 2)&^after(al, nAl, 3)
	}
	m.spelled.markSpelled(base, iso, numbers, nd)
}

// b64Runs sets fB64Run and fLongRun for the runs of base64 bytes that
// reach their lengths in this block. A run's flags do not depend on where
// it ends, as every run ends (at the latest at len(s)).
func (m *maskScan) b64Runs(b uint64) {
	lead := bits.TrailingZeros64(^b) // the run that goes on from the block before
	m.f |= b64Run(m.b64 + lead)
	// r has bit i when the 16 bytes from i are base64.
	r := b & (b >> 1)
	r &= r >> 2
	r &= r >> 4
	r &= r >> 8
	if r != 0 {
		m.f |= fB64Run
	}
	if b == ^uint64(0) {
		m.b64 += 64
	} else {
		m.b64 = bits.LeadingZeros64(^b)
	}
}

// cardDigits counts the digits in a row: spaces and dashes keep the count,
// any other byte that is no digit resets it.
func (m *maskScan) cardDigits(c *blockMasks) {
	reset := ^(c.digit | c.blank | c.dash)
	nd := bits.OnesCount64(c.digit)
	if m.digits+nd >= 13 { // the count may reach 13 here: follow it digit by digit
		run, r := m.digits, reset
		for d := c.digit; d != 0; d &= d - 1 {
			below := d&-d - 1
			if r&below != 0 {
				run = 0
				r &^= below
			}
			if run++; run >= 13 {
				m.f |= fCardDigits
				return
			}
		}
	}
	if reset == 0 {
		m.digits += nd
	} else {
		m.digits = bits.OnesCount64(c.digit >> (64 - bits.LeadingZeros64(reset)))
	}
}

// marks looks for the specific marks where the classes of the bytes
// around fit them, and reads the bytes only there.
func (m *maskScan) marks(base int, p, c, n *blockMasks) {
	if c.upper|c.digit|c.under|c.dash|c.dot|c.pct == 0 {
		return // every mark starts or ends with one of these
	}
	s, f := m.s, m.f
	letter, pLetter, nLetter := c.lower|c.upper, p.lower|p.upper, n.lower|n.upper
	// Two capitals and two digits.
	if f&fIBAN == 0 && c.upper != 0 && c.upper&after(c.upper, n.upper, 1)&after(c.digit, n.digit, 2)&after(c.digit, n.digit, 3) != 0 {
		f |= fIBAN
	}
	// eyJ: a capital after two lower-case letters.
	if f&fJWT == 0 && c.upper != 0 {
		for x := c.upper & before(c.lower, p.lower, 1) & before(c.lower, p.lower, 2); x != 0; x &= x - 1 {
			if i := base + bits.TrailingZeros64(x); s[i] == 'J' && s[i-2] == 'e' && s[i-1] == 'y' {
				f |= fJWT
				break
			}
		}
	}
	// 0x: a digit before a letter.
	if f&fEth == 0 && c.digit != 0 {
		for x := c.digit & after(letter, nLetter, 1); x != 0; x &= x - 1 {
			if i := base + bits.TrailingZeros64(x); s[i] == '0' && s[i+1]|0x20 == 'x' {
				f |= fEth
				break
			}
		}
	}
	// bc1, tb1: a digit after two letters.
	if f&fBech32 == 0 && c.digit != 0 {
		for x := c.digit & before(letter, pLetter, 1) & before(letter, pLetter, 2); x != 0; x &= x - 1 {
			if i := base + bits.TrailingZeros64(x); s[i] == '1' && (s[i-2]|0x20 == 'b' && s[i-1]|0x20 == 'c' || s[i-2]|0x20 == 't' && s[i-1]|0x20 == 'b') {
				f |= fBech32
				break
			}
		}
	}
	// Delimited hex: a digit, then hex, delimiter, hex, hex, delimiter,
	// hex, hex; hex bytes are letters or digits, a delimiter neither.
	if f&fDelimHex == 0 && c.digit != 0 {
		a, na := letter|c.digit, nLetter|n.digit
		x := c.digit & after(a, na, 1) &^ after(a, na, 2) & after(a, na, 3) & after(a, na, 4) &^
			after(a, na, 5) & after(a, na, 6) & after(a, na, 7)
		for ; x != 0 && f&fDelimHex == 0; x &= x - 1 {
			if i := base + bits.TrailingZeros64(x); i+7 < len(s) {
				delimitedHexAt(s, i, &f)
			}
		}
	}
	if f&fKeyShape == 0 && c.under|c.dash|c.dot != 0 {
		f |= m.keyShape(base, p, c)
	}
	// %2525: a % before four digits.
	if f&fPercent == 0 && c.pct != 0 {
		for x := c.pct & after(c.digit, n.digit, 1) & after(c.digit, n.digit, 2) & after(c.digit, n.digit, 3) & after(c.digit, n.digit, 4); x != 0; x &= x - 1 {
			if i := base + bits.TrailingZeros64(x); i+4 < len(s) && s[i+1:i+5] == "2525" {
				f |= fPercent
				break
			}
		}
	}
	m.f = f
}

// keyShape is fKeyShape when a provider prefix ends in the block: at a
// '_' or '-' after lower-case letters, or a '.' after two capitals.
func (m *maskScan) keyShape(base int, p, c *blockMasks) uint32 {
	s := m.s
	lower1, lower2 := before(c.lower, p.lower, 1), before(c.lower, p.lower, 2)
	for x := c.under & (lower1 | before(c.lower, p.lower, 3)); x != 0; x &= x - 1 { // gh?_, k_
		if i := base + bits.TrailingZeros64(x); i >= 3 && s[i-3] == 'g' && s[i-2] == 'h' || i >= 1 && s[i-1] == 'k' {
			return fKeyShape
		}
	}
	for x := c.dash & (lower1 | lower2); x != 0; x &= x - 1 { // sk-, glpat-, xox?-
		if i := base + bits.TrailingZeros64(x); i >= 2 && s[i-2] == 's' && s[i-1] == 'k' || i >= 5 && s[i-5:i] == "glpat" || i >= 4 && s[i-4:i-1] == "xox" {
			return fKeyShape
		}
	}
	for x := c.dot & before(c.upper, p.upper, 1) & before(c.upper, p.upper, 2); x != 0; x &= x - 1 { // SG.
		if i := base + bits.TrailingZeros64(x); s[i-2] == 'S' && s[i-1] == 'G' {
			return fKeyShape
		}
	}
	return 0
}

// base58 hands wordRun.base58 the words of letters and digits (a) of 26
// bytes or more that end in the block; m.word carries the one that goes
// on into the next.
func (m *maskScan) base58(base int, a uint64) {
	lead := bits.TrailingZeros64(^a) // the word that goes on from the block before
	if lead == 64 {
		m.word += 64
		return
	}
	if m.word+lead >= 26 {
		m.wr.base58(base+lead, m.word+lead)
	}
	// r has bit i when the 26 bytes from i are letters or digits: the
	// start of a long word, as few are.
	r := a & (a >> 1)
	r &= r >> 2
	r &= r >> 4
	r &= r >> 8
	r &= r >> 10
	r &^= 1<<lead - 1
	for r != 0 {
		j := bits.TrailingZeros64(r)
		rest := ^a >> j
		if rest == 0 {
			break // it goes on into the next block
		}
		k := j + bits.TrailingZeros64(rest)
		m.wr.base58(base+k, k-j)
		r &^= 1<<k - 1
	}
	m.word = bits.LeadingZeros64(^a)
}

// words finds the runs of wordlist candidates that wordRun would hand
// phraseRuns, without looking up most words.
//
// Only a word of 3 to 8 lower-case letters can be a wordlist word, and a
// run of them goes on only over white space: any other word or byte cuts
// it. Such words in a row form a chain, and a run lies in a chain. Three
// additions carry a mark from the start of a run of bytes of one class to
// the byte after it, in all words of a block at once (and into the next
// block by their carries): from the start of a word to its end, whether
// it is all lower-case; from the end of such a word over the white space
// after it, to where the next word starts; and from there to the end of
// that word, which goes on the chain. So a chain's words are counted with
// a popcount, and only a chain that has minPhraseWords words after the
// last one known to be no candidate has its words looked up (resolve),
// from the last back: in prose, most chains are shorter, and the first
// word looked up is most often no candidate.
func (m *maskScan) words(base int, p, c *blockMasks) {
	letters, pLetters := c.lower|c.upper|c.high, p.lower|p.upper|p.high
	starts := letters &^ before(letters, pLetters, 1)
	sum, carry := bits.Add64(c.lower, starts&c.lower, m.carryLower)
	m.carryLower = carry
	chain := sum &^ letters                                            // ends of the words of lower-case letters
	chain &= before(c.lower, p.lower, 2) & before(c.lower, p.lower, 3) // of three letters or more
	chain &^= lowerRun9(c.lower, p.lower)                              // and eight at most
	sum, carry = bits.Add64(c.space, chain&c.space, m.carrySpace)
	m.carrySpace = carry
	next := sum &^ c.space // the byte after the white space after such a word
	sum, carry = bits.Add64(letters, next&letters, m.carryCont)
	m.carryCont = carry
	chainStarts := chain &^ sum // words that do not go on from the one before

	x := chain
	if d := m.read - base; d >= 0 {
		x &^= 2<<d - 1 // resolve read the words up to m.read
	}
	// Most often no chain can reach minPhraseWords here: the block has
	// fewer words, and the chain from the block before with those up to
	// the first start is short too.
	begins := x & chainStarts
	if n := bits.OnesCount64(x); n < minPhraseWords && m.pend+bits.OnesCount64(x&(begins&-begins-1)) < minPhraseWords {
		if begins == 0 {
			m.pend += n
		} else { // the words from the last start on
			m.pend = bits.OnesCount64(x >> (63 - bits.LeadingZeros64(begins)))
		}
		return
	}
	for x != 0 {
		low := x & -x
		if low&chainStarts != 0 {
			m.pend = 0
		}
		seg := x // the words of this chain in the block
		if later := chainStarts &^ (low | (low - 1)); later != 0 {
			seg &= later&-later - 1
		}
		if n := bits.OnesCount64(seg); m.pend+n < minPhraseWords {
			m.pend += n
			x &^= seg
			continue
		}
		for k := minPhraseWords - 1 - m.pend; k > 0; k-- {
			seg &= seg - 1
		}
		m.resolve(base + bits.TrailingZeros64(seg))
		if d := m.read - base; d < 64 {
			x &^= 2<<d - 1
		} else {
			x = 0
		}
	}
}

// resolve looks up, from the last back, the minPhraseWords words of a
// chain that end at end, none known to be no candidate. At the first that
// is no candidate, the words after it are the new m.pend. When all are
// candidates, they are a run, which resolve follows on to where the byte
// loop would cut it, and hands to phraseRuns as wordRun.cut does.
func (m *maskScan) resolve(end int) {
	s, set := m.s, m.wr.set
	m.read = end
	e := end
	for j := range minPhraseWords {
		start, k := chainWordBefore(s, e)
		if !set.maybe(k) {
			m.pend = j
			return
		}
		for e = start; e > 0 && byteClass[s[e-1]] == clSpace; e-- {
		}
	}
	// The run goes on over white space and candidates; the first other
	// byte cuts it, or the end of the first other word.
	run, last, cut := minPhraseWords, end, 0
	for i := last; ; {
		for i < len(s) && byteClass[s[i]] == clSpace {
			i++
		}
		j := i
		for j < len(s) && isLetter(s[j]) {
			j++
		}
		if j == i { // no word: a byte that cuts, or the end
			cut = i
			break
		}
		if k, ok := lowerWord(s[i:j]); !ok || !set.maybe(k) {
			cut = j
			break
		}
		run, last, i = run+1, j, j
	}
	m.wr.phrases = phraseRuns(s, runStartBefore(s, last, run), cut, m.wr.phrases)
	m.pend, m.read = 0, cut
}

// chainWordBefore is the start and packed key of a chain's word that ends
// at e: 3 to 8 lower-case letters, after a byte that is none.
func chainWordBefore(s string, e int) (start int, key uint64) {
	if e < 8 {
		start = e
		for start > 0 && isLowerASCII(s[start-1]) {
			start--
		}
		key, _ = packWord(s[start:e])
		return start, key
	}
	w := load8(s[e-8 : e])
	other := ^lowerBytes(w) & hiBits // bytes that are no letters: the last is before the word
	low := other & -other
	if low == 0 {
		return e - 8, w
	}
	return e - bits.TrailingZeros64(low)/8, w & (low>>7 - 1)
}

// lowerWord is w packed, when w may be a wordlist word: 3 to 8 lower-case
// letters.
func lowerWord(w string) (uint64, bool) {
	if len(w) < 3 || len(w) > 8 {
		return 0, false
	}
	for i := 0; i < len(w); i++ {
		if !isLowerASCII(w[i]) {
			return 0, false
		}
	}
	return packWord(w)
}

// lowerRun9 has bit i when the nine bytes before byte i are lower-case
// letters (x, and px in the block before), by doubling: bytes i-k to i-1
// for k = 1, 2, 4, 8, then 9.
func lowerRun9(x, px uint64) uint64 {
	r1, p1 := before(x, px, 1), px<<1 // p1's low bits, which miss the block before px, are not shifted in
	r2, p2 := r1&before(r1, p1, 1), p1&(p1<<1)
	r4, p4 := r2&before(r2, p2, 2), p2&(p2<<2)
	r8 := r4 & before(r4, p4, 4)
	return r8 & before(r1, p1, 8)
}

// runStartBefore is where the byte loop last cut the run of n words that
// ends at end, before the run started: the byte before the white space in
// front of the run when it is no letter, the end of the word there (which
// was no candidate), or 0.
func runStartBefore(s string, end, n int) int {
	i := end
	for ; n > 0; n-- {
		for i > 0 && isLetter(s[i-1]) {
			i--
		}
		for i > 0 && byteClass[s[i-1]] == clSpace {
			i--
		}
	}
	switch {
	case i == 0:
		return 0
	case isLetter(s[i-1]):
		return i
	}
	return i - 1
}

// Byte classes of featureMasksGo, one bit each.
const (
	mLower = 1 << iota
	mUpper
	mDigit
	mSpace
	mBlank
	mHigh
	mB64
	mAssign
	mDash
	mUnder
	mDot
	mPct
	mBslash
)

var maskClass = func() (t [256]uint16) {
	for c := range 256 {
		b := byte(c)
		var k uint16
		switch byteClass[b] {
		case clLower:
			k |= mLower
		case clUpper:
			k |= mUpper
		case clDigit:
			k |= mDigit
		case clSpace:
			k |= mSpace
		}
		if b64Chars[b] {
			k |= mB64
		}
		if b >= 0x80 {
			k |= mHigh
		}
		switch b {
		case ' ':
			k |= mBlank
		case '=', ':':
			k |= mAssign
		case '-':
			k |= mDash
		case '_':
			k |= mUnder
		case '.':
			k |= mDot
		case '%':
			k |= mPct
		case '\\':
			k |= mBslash
		}
		t[c] = k
	}
	return t
}()

// featureMasksGo is featureMasks in Go, a byte at a time: for a CPU
// without the assembly's instructions, and the tests' reference.
func featureMasksGo(p *byte, blocks int, out *blockMasks) {
	b := unsafe.Slice(p, blocks*64)
	o := unsafe.Slice(out, blocks)
	for k := range o {
		var m blockMasks
		for i, c := range b[k*64 : k*64+64] {
			t, bit := maskClass[c], uint64(1)<<i
			m.lower |= bit & -uint64(t&mLower)
			m.upper |= bit & -uint64(t>>1&1)
			m.digit |= bit & -uint64(t>>2&1)
			m.space |= bit & -uint64(t>>3&1)
			m.blank |= bit & -uint64(t>>4&1)
			m.high |= bit & -uint64(t>>5&1)
			m.b64 |= bit & -uint64(t>>6&1)
			m.assign |= bit & -uint64(t>>7&1)
			m.dash |= bit & -uint64(t>>8&1)
			m.under |= bit & -uint64(t>>9&1)
			m.dot |= bit & -uint64(t>>10&1)
			m.pct |= bit & -uint64(t>>11&1)
			m.bslash |= bit & -uint64(t>>12&1)
		}
		o[k] = m
	}
}
