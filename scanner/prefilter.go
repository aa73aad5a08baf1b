package scanner

// Features of a text that the own detectors need, found in one pass, so
// that a detector whose marks are absent does not read the text at all.
const (
	fCardDigits = 1 << iota // 13 digits close together
	fIBAN                   // two capitals and two digits
	fBase58                 // a 26-112 character word of base58 digits
	fKeyShape               // a provider prefix: gh?_ sk- k_live_ SG. glpat- xox?-
	fJWT                    // eyJ
	fEth                    // 0x
	fBech32                 // bc1, tb1
	fLongRun                // minHexKeyRun base64 bytes in a row: a hex private key may be there
	fAssign                 // = or :
	fPercent                // %2525
	fDelimHex               // hex bytes split by a delimiter
	fWords                  // a BIP-39 phrase: 12 to 24 wordlist words in a row with its checksum
	fB64Run                 // minBase64Run base64 or base64url bytes in a row: encodedRuns may find one
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
// It is the scanner's per-byte pass for the own detectors, so its common
// bytes take short paths: a run of lower-case letters is one tight loop,
// and a word is looked up in the wordlist once, at its end, packed by one
// load of the eight bytes before it.
func scanFeatures(s string) featureMarks {
	var f uint32
	// The counters of the loop are its own locals (no closure shares them),
	// so that they stay in registers; the wordlist run, touched once a
	// word, lives in wr.
	digits := 0      // digits in a row (spaces and dashes allowed between)
	word := 0        // letters and digits in a row
	nb58 := uint8(0) // not 0 when one of them is no base58 digit (bits, not a branch per word)
	// Words as mnemonics reads them: runs of letters (ASCII and any byte
	// from 0x80) split by white space; a run of wordlist words is cut by
	// any other word or byte.
	letters := 0      // letters in the current word
	lowerOnly := true // the current word is all lower-case ASCII
	b64 := 0          // base64 and base64url bytes in a row
	wr := wordRun{s: s, set: bip39Words39()}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if t := lowerRun[c]; t != 0 {
			j := i + 1
			for j < len(s) && lowerRun[s[j]] != 0 {
				t |= lowerRun[s[j]]
				j++
			}
			letters += j - i
			word += j - i
			b64 += j - i
			digits = 0
			nb58 |= t & lowerL
			if j < len(s) && s[j] == ' ' {
				// The commonest end of a word, taken here as the clSpace
				// case takes it, with wr.endLetters written out: without a
				// call in the common case, as a call spills every counter
				// of the loop.
				if lowerOnly && uint(letters-3) <= 8-3 {
					var k uint64
					if j >= 8 {
						k = load8(s[j-8:j]) & lowBytes[letters&7]
					} else {
						k = packedBefore(s, j, letters)
					}
					if v, in := wr.set.index(k); in {
						wr.add(v)
					} else {
						wr.cutAt(j)
					}
				} else {
					wr.cutAt(j)
				}
				letters, lowerOnly = 0, true
				if word >= 26 {
					wr.base58(j, word, nb58)
				}
				f |= b64Run(b64)
				word, nb58, b64 = 0, 0, 0
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
				wr.base58(i, word, nb58)
			}
			f |= b64Run(b64)
			word, nb58, b64 = 0, 0, 0
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
			if c == '0' {
				nb58 = 1
				if i+1 < len(s) && s[i+1]|0x20 == 'x' {
					f |= fEth
				}
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
			switch c {
			case 'I', 'O':
				nb58 = 1
			case 'J':
				if i >= 2 && s[i-2] == 'e' && s[i-1] == 'y' {
					f |= fJWT
				}
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
				if i+4 < len(s) && s[i+1:i+5] == "2525" {
					f |= fPercent
				}
			}
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
			wr.base58(i, word, nb58)
		}
		word, nb58 = 0, 0
	}
	if word >= 26 {
		wr.base58(len(s), word, nb58)
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
	return featureMarks{f: f, phrases: wr.phrases, words58: wr.words58}
}

// base58 notes the word of letters and digits (at least 26 of them) that
// ends at end when it has a key's or address's length and only base58
// digits (nb58 == 0).
func (w *wordRun) base58(end, word int, nb58 uint8) {
	if nb58 == 0 && word <= 112 {
		w.words58 = append(w.words58, [2]int{end - word, end})
	}
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

// wordRun is featureScan's run of wordlist words.
type wordRun struct {
	s        string
	set      *bip39Set
	run      int        // wordlist words in a row
	runStart int        // where the run was last cut
	idx      [24]uint16 // the run's words' wordlist indices
	phrases  [][2]int
	words58  [][2]int // base58 words of 26 to 112 digits
}

func (w *wordRun) cut(i int) {
	switch w.run {
	case 12, 15, 18, 21, 24:
		if bip39ChecksumOf(w.idx[:w.run]) {
			w.phrases = append(w.phrases, [2]int{w.runStart, i})
		}
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
	if lowerOnly && uint(letters-3) <= 8-3 { // 3 to 8 letters
		w.lookUp(i, letters)
		return
	}
	w.cutAt(i)
}

// lookUp adds the word of letters before i to the run when it is a
// wordlist word, and cuts the run there when not.
func (w *wordRun) lookUp(i, letters int) {
	if v, in := w.set.index(packedBefore(w.s, i, letters)); in {
		w.add(v)
		return
	}
	w.cutAt(i)
}

// add adds the wordlist word of index v to the run.
func (w *wordRun) add(v uint16) {
	if w.run < len(w.idx) {
		w.idx[w.run] = v
	}
	w.run++
}

// lowerRun marks the lower-case letters for featureScan's tight loop, with
// the one that needs a second look: l (no base58 digit).
const (
	lowerAny = 1 << iota
	lowerL
)

var lowerRun = func() (t [256]uint8) {
	for c := 'a'; c <= 'z'; c++ {
		t[c] = lowerAny
	}
	t['l'] |= lowerL
	return t
}()

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

// delimitedHexAt sets fDelimHex when three hex bytes split by one
// delimiter start at s[i] (i+7 < len(s)).
func delimitedHexAt(s string, i int, f *uint32) {
	d := s[i+2]
	if (d == '-' || d == ':' || d == '.' || d == ',' || d == ' ') && s[i+5] == d &&
		isHexByte[s[i+1]] && isHexByte[s[i+3]] && isHexByte[s[i+4]] && isHexByte[s[i+6]] && isHexByte[s[i+7]] {
		*f |= fDelimHex
	}
}
