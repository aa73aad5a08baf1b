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

// Byte classes for features: most bytes of prose are lower-case letters
// and spaces, which take the short path.
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
func featureScan(s string) (f uint32, phrases [][2]int) {
	runStart := 0        // where the current run of wordlist words was last cut
	var idx [24]uint16   // the run's words' wordlist indices
	digits := 0          // digits in a row (spaces and dashes allowed between)
	word, b58 := 0, true // letters and digits in a row; all base58 digits
	// Words as mnemonics reads them: runs of letters (ASCII and any byte
	// from 0x80) split by white space; a run of wordlist words is cut by
	// any other word or byte, and only one of a phrase's lengths is worth
	// mnemonics' reading.
	letters, run := 0, 0 // letters in the current word; wordlist words in a row
	lowerOnly := true    // the current word is all lower-case ASCII
	var packed uint64    // its letters, packed as bip39Set packs them
	set := bip39Words39()
	cut := func(i int) {
		switch run {
		case 12, 15, 18, 21, 24:
			if bip39ChecksumOf(idx[:run]) {
				f |= fWords
				phrases = append(phrases, [2]int{runStart, i})
			}
		}
		run, runStart = 0, i
	}
	// endLetters ends the current word at a byte that is no letter.
	endLetters := func(i int, space bool) {
		if letters > 0 {
			if v, ok := set.index(packed); ok && lowerOnly && letters >= 3 && letters <= 8 {
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
	endWord := func(i int) { // at a byte that ends a word of letters and digits
		if b58 && word >= 26 && word <= 112 {
			f |= fBase58
		}
		word, b58 = 0, true
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch byteClass[c] {
		case clLower:
			letters++
			packed = packed<<8 | uint64(c)
			word++
			switch c {
			case 'l':
				b58 = false
			case 'y':
				if i >= 2 && s[i-1] == 'e' && (s[i-2] == 'k' || s[i-2] == 'K') {
					f |= fKeyWord
				}
			}
			digits = 0
			continue
		case clSpace:
			endLetters(i, true)
			endWord(i)
			if c == ' ' {
				continue // between digit groups too
			}
			digits = 0
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

// delimitedHexAt sets fDelimHex when three hex bytes split by one
// delimiter start at s[i] (i+7 < len(s)).
func delimitedHexAt(s string, i int, f *uint32) {
	d := s[i+2]
	if (d == '-' || d == ':' || d == '.' || d == ',' || d == ' ') && s[i+5] == d &&
		isHexByte[s[i+1]] && isHexByte[s[i+3]] && isHexByte[s[i+4]] && isHexByte[s[i+6]] && isHexByte[s[i+7]] {
		*f |= fDelimHex
	}
}
