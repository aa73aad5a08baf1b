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
	fKeyWord                // key, in any case
	fAssign                 // = or :
	fPercent                // %2525
	fDelimHex               // hex bytes split by a delimiter
	fWords                  // a BIP-39 phrase: 12 to 24 wordlist words in a row with its checksum
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
	f, _ := featureScan(s)
	return f
}

// featureScan is features and, when fWords is set, the spans of s that
// hold the phrases: each starts and ends where mnemonics cuts a run, so
// that mnemonics reads the same runs in them as in s.
//
// It is the scanner's per-byte pass for the own detectors, so its common
// bytes take short paths: a run of lower-case letters is one tight loop,
// and wordlist lookups wait until twelve words of a wordlist word's shape
// (3 to 8 lower-case letters) stand in a row, which prose and code rarely
// have (appendPhrases then reads that run word by word).
func featureScan(s string) (f uint32, phrases [][2]int) {
	digits := 0          // digits in a row (spaces and dashes allowed between)
	word, b58 := 0, true // letters and digits in a row; all base58 digits
	// Words as mnemonics reads them: runs of letters (ASCII and any byte
	// from 0x80) split by white space; a run of wordlist words is cut by
	// any other word or byte.
	letters := 0      // letters in the current word
	lowerOnly := true // the current word is all lower-case ASCII
	shapes := 0       // words of a wordlist word's shape in a row
	runStart := 0     // where that run was last cut
	cut := func(i int) {
		if shapes >= 12 {
			var ok bool
			if phrases, ok = appendPhrases(phrases, s, runStart, i); ok {
				f |= fWords
			}
		}
		shapes, runStart = 0, i
	}
	// endLetters ends the current word at a byte that is no letter.
	endLetters := func(i int, space bool) {
		if letters > 0 {
			if lowerOnly && letters >= 3 && letters <= 8 {
				shapes++
			} else {
				cut(i)
			}
			letters, lowerOnly = 0, true
		}
		if !space {
			cut(i)
		}
	}
	endWord := func(i int) { // at a byte that ends a word of letters and digits
		if b58 && word >= 26 && word <= 112 {
			f |= fBase58
		}
		word, b58 = 0, true
	}
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
			digits = 0
			if t&lowerL != 0 {
				b58 = false
			}
			if t&lowerY != 0 && f&fKeyWord == 0 {
				for k := max(i, 2); k < j; k++ {
					if s[k] == 'y' && s[k-1] == 'e' && (s[k-2] == 'k' || s[k-2] == 'K') {
						f |= fKeyWord
						break
					}
				}
			}
			i = j - 1
			continue
		}
		switch byteClass[c] {
		case clSpace:
			endLetters(i, true)
			endWord(i)
			if c != ' ' { // a space may stand between digit groups
				digits = 0
			}
			continue
		case clDigit:
			if digits++; digits >= 13 {
				f |= fCardDigits
			}
			word++
			if c == '0' {
				b58 = false
				if i+1 < len(s) && s[i+1]|0x20 == 'x' {
					f |= fEth
				}
			}
			if c == '1' && i >= 2 && (s[i-2]|0x20 == 'b' && s[i-1]|0x20 == 'c' || s[i-2]|0x20 == 't' && s[i-1]|0x20 == 'b') {
				f |= fBech32
			}
			endLetters(i, false)
			if i+7 < len(s) {
				delimitedHexAt(s, i, &f)
			}
			continue
		case clUpper:
			word++
			switch c {
			case 'I', 'O':
				b58 = false
			case 'J':
				if i >= 2 && s[i-2] == 'e' && s[i-1] == 'y' {
					f |= fJWT
				}
			case 'Y':
				if i >= 2 && s[i-2] == 'K' && s[i-1] == 'E' {
					f |= fKeyWord
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
		if c >= 0x80 {
			letters++
			lowerOnly = false
		} else {
			endLetters(i, false)
		}
		endWord(i)
	}
	endWord(len(s))
	endLetters(len(s), false)
	return f, phrases
}

// lowerRun marks the lower-case letters for featureScan's tight loop, with
// the two that need a second look: l (no base58 digit) and y (of "key").
const (
	lowerAny = 1 << iota
	lowerL
	lowerY
)

var lowerRun = func() (t [256]uint8) {
	for c := 'a'; c <= 'z'; c++ {
		t[c] = lowerAny
	}
	t['l'] |= lowerL
	t['y'] |= lowerY
	return t
}()

// appendPhrases reads s[start:end], a run that featureScan cut at both
// ends, word by word as mnemonics does, and appends the spans of its
// phrases (12 to 24 wordlist words in a row with a valid checksum); ok
// reports whether there was one.
func appendPhrases(phrases [][2]int, s string, start, end int) (_ [][2]int, ok bool) {
	set := bip39Words39()
	var idx [24]uint16 // the run's words' wordlist indices
	run, runStart := 0, start
	letters, lowerOnly := 0, true
	var packed uint64
	cut := func(i int) {
		switch run {
		case 12, 15, 18, 21, 24:
			if bip39ChecksumOf(idx[:run]) {
				ok = true
				phrases = append(phrases, [2]int{runStart, i})
			}
		}
		run, runStart = 0, i
	}
	endLetters := func(i int, space bool) {
		if letters > 0 {
			v, in := uint16(0), false
			if lowerOnly && letters >= 3 && letters <= 8 {
				v, in = set.index(packed)
			}
			if in {
				if run < len(idx) {
					idx[run] = v
				}
				run++
			} else {
				cut(i)
			}
			letters, packed, lowerOnly = 0, 0, true
		}
		if !space {
			cut(i)
		}
	}
	for i := start; i < end; i++ {
		switch c := s[i]; {
		case c >= 'a' && c <= 'z':
			letters++
			packed = packed<<8 | uint64(c)
		case c >= 'A' && c <= 'Z' || c >= 0x80:
			letters++
			lowerOnly = false
		default:
			endLetters(i, byteClass[c] == clSpace)
		}
	}
	endLetters(end, false)
	return phrases, ok
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
