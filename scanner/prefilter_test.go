package scanner

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestFeatureScanMatchesReference: featureScan with its fast paths gives
// the marks and phrase spans of the plain per-byte scan it replaced, on
// texts made of every kind of byte each mark looks at.
func TestFeatureScanMatchesReference(t *testing.T) {
	m := fakeMnemonic(16)
	parts := []string{" ", "  ", "\n", "\t", ".", ",", ":", "=", "_", "-", "%2525", "5", "0x", "bc1", "tb1", "key", "Key", "KEY", "eyJ",
		"ghp_", "sk-", "k_", "SG.", "glpat-", "xoxb-", "DE89", "4111 1111 1111 1111", "de:ad:be:ef:00:11", "abandon ", "zoo ", "the ",
		"able", "Zoo ", "é", "l", "O", "I", "+", "/", "QUJDREVGR0g=", "4142434445464748", "g h p _ a 1 ", "x-y-z-", `"q", "r", `, "103,", "98, ", "7,", "1234,", "\\", "\\x41", strings.Repeat("9f", 16), strings.Repeat("9xKm", 20), strings.Repeat("z", 113), "1BoatSLRHtKNngkdXEeobR76b6LR", m, m + " ", " " + m + ".", "abc def ghi "}
	r := rand.New(rand.NewPCG(21, 22))
	phrases := 0
	for n := 0; n < 50000; n++ {
		var b strings.Builder
		for k := r.IntN(16); k > 0; k-- {
			b.WriteString(parts[r.IntN(len(parts))])
		}
		// Behind 0 to 63 bytes of filler, runs and marks fall on every
		// place of a block and straddle blocks.
		text := strings.Repeat("x", r.IntN(64)) + b.String()
		checkFeatureScan(t, text)
		_, spans := featureScanRef(text)
		phrases += len(spans)
	}
	if phrases < 100 {
		t.Fatalf("only %d phrases: the texts do not test the wordlist path", phrases)
	}
}

// featureScanners are scanFeatures' ways: the byte loop, and the block
// classes in Go and as this CPU has them (the assembly where it can).
var featureScanners = map[string]func(string) featureMarks{
	"bytes":    scanFeatureBytes,
	"masks/go": func(s string) featureMarks { return scanMasks(s, true) },
	"masks":    scanFeatureMasks,
}

// checkFeatureScan fails when a way of scanFeatures differs from the
// reference on text, or misses what the detectors after it find.
func checkFeatureScan(t *testing.T, text string) {
	t.Helper()
	wf, wspans := featureScanRef(text)
	wantWords := base58Words(text)
	for name, scan := range featureScanners {
		m := scan(text)
		if m.f != wf || !slices.Equal(m.phrases, wspans) {
			t.Fatalf("%s %q: got %b %v, want %b %v", name, text, m.f, m.phrases, wf, wspans)
		}
		if !slices.Equal(m.words58, wantWords) {
			t.Fatalf("%s %q: base58 words %v, want %v", name, text, m.words58, wantWords)
		}
		var sp featureMarks
		spelledBytes(text, &sp)
		if m.spelled != sp.spelled || m.numbers != sp.numbers {
			t.Fatalf("%s %q: spelled and number spans %v %v, want %v %v", name, text, m.spelled, m.numbers, sp.spelled, sp.numbers)
		}
	}
	if wf&fB64Run == 0 && len(encodedRuns(text)) > 0 {
		t.Fatalf("%q: encoded runs without fB64Run", text)
	}
}

// TestHexSepPrefilter: where mayHoldHexSep says no, hexSepRuns finds no run
// whose decoding holds an ASCII byte with two more bytes after it, in texts
// of separated hex runs of every form (ASCII, UTF-8 whose pairs all start
// with a letter, mixes) among prose, by each way of the feature pass.
func TestHexSepPrefilter(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	payloads := []string{"ghp_secret", "AKIA0123", "\u02a0\u02a1\u02a2\u02a3\u02a4\u02a5\u02a6\u02a7\u02a8", "\u02a0\u02a1\u02a2\u02a3\u02a4\u02a5\u02a6\u02a7ab", "\u00e9t\u00e9 caf\u00e9 cr\u00e8me br\u00fbl\u00e9e"}
	for i, p := range payloads {
		payloads[i] = unquoteJSON(t, p)
	}
	forms := []struct{ prefix, sep string }{{"", "-"}, {"", ":"}, {"", " "}, {"", ","}, {`\x`, ""}, {"0x", ","}, {"0x", ", "}, {"0X", ""}}
	skipped, found := 0, 0
	for range 20000 {
		var b strings.Builder
		for range 1 + r.IntN(3) {
			b.WriteString(strings.Repeat("the river runs past the old mill ", r.IntN(3)))
			payload := payloads[r.IntN(len(payloads))]
			payload = strings.Repeat(payload, 3)[:min(len(payload)*3, 16+r.IntN(24))]
			f := forms[r.IntN(len(forms))]
			for k := 0; k < len(payload); k++ {
				if k > 0 {
					b.WriteString(f.sep)
				}
				b.WriteString(f.prefix)
				fmt.Fprintf(&b, "%02x", payload[k])
			}
			b.WriteString(strings.Repeat(" and a garden wall", r.IntN(2)))
		}
		text := b.String()
		for name, scan := range featureScanners {
			g := &segment{text: text, marks: scan(text), scanned: true}
			if mayHoldHexSep(g) {
				continue
			}
			skipped++
			for _, run := range hexSepRuns(text) {
				found++
				if d := run.decoded; asciiBeforeLastTwo(d) {
					t.Fatalf("%s: %q skipped, but its run at %d decodes to %q", name, text, run.start, d)
				}
			}
		}
	}
	if skipped == 0 || found == 0 {
		t.Fatalf("the texts never test the prefilter: %d skipped, %d runs found in them", skipped, found)
	}
}

// asciiBeforeLastTwo reports whether s has an ASCII byte with two bytes after it.
func asciiBeforeLastTwo(s string) bool {
	for i := 0; i+2 < len(s); i++ {
		if s[i] < 0x80 {
			return true
		}
	}
	return false
}

func unquoteJSON(t *testing.T, s string) string {
	var out string
	if err := json.Unmarshal([]byte(`"`+s+`"`), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestFeatureScanBlocks: the block classes meet marks and runs at and
// across the edges of blocks, and at the text's end, in texts of every
// length around the edges.
func TestFeatureScanBlocks(t *testing.T) {
	m := fakeMnemonic(12)
	marks := []string{"4111 1111 1111 1111", "4111-1111-1111-1111", "DE89", "1BoatSLRHtKNngkdXEeobR76b6LR", "ghp_", "gh_", "k_", "sk-",
		"glpat-", "xoxb-", "eyJ", "0x", "0X", "bc1", "TB1", "de:ad:be:ef:00:11", "ab-cd-ef", "=", ":", "%2525", "SG.", "\\", "\\x41",
		strings.Repeat("a", 16), strings.Repeat("Q", 64), strings.Repeat("7", 26), strings.Repeat("9xKm", 28), strings.Repeat("9xKm", 29),
		"123456" + strings.Repeat(" ", 70) + "1234567", "123456" + strings.Repeat("- ", 70) + "123456", strings.Repeat("-", 64) + "1234567890123",
		m, m + " zoo", "zoo " + m, m + ".", m + "1", m + " Zoo", m + " é", "é " + m, "\t" + m + "\n",
		strings.Repeat("zz ", 14) + "10,11,12,13,14,15,16,17", strings.Repeat("zz ", 11) + "100,101,102,103,104,105,106,107", strings.Repeat("zz ", 14) + "a b c d e f g h i j k l"}
	for _, mark := range marks {
		for _, sep := range []string{" ", ".", "é", "\n"} {
			for pre := range 130 {
				text := strings.Repeat("q", pre%7) + strings.Repeat(sep, pre/7) + mark
				checkFeatureScan(t, text)
				checkFeatureScan(t, text+sep)
				checkFeatureScan(t, text+strings.Repeat("x", pre%5)+"!")
			}
		}
	}
}

// TestFeatureScanAllocs: the scan allocates only what it returns, so a
// text without phrases or base58 words costs no allocation, however long.
func TestFeatureScanAllocs(t *testing.T) {
	text := strings.Repeat("the agent reads the file, and 4111 DE89 eyJ %25 writes\n", 200)
	for name, scan := range featureScanners {
		if m := scan(text); len(m.phrases)+len(m.words58) > 0 {
			t.Fatalf("%s: the text has phrases or base58 words: %v %v", name, m.phrases, m.words58)
		}
		if n := testing.AllocsPerRun(10, func() { scan(text) }); n != 0 {
			t.Errorf("%s: %v allocations", name, n)
		}
	}
}

func FuzzFeatureScan(f *testing.F) {
	f.Add("the key is 4111 1111 1111 1111 and " + fakeMnemonic(12))
	f.Add("eyJ ghp_ SG. %2525 de:ad:be:ef:00:11 DE89 0x bc1 é")
	f.Add("token=c2VjcmV0LXZhbHVlLWhlcmU= 414243444546474849505152535455565758")
	f.Add(strings.Repeat("zoo ", 12) + "wrong\tabandon " + fakeMnemonic(15) + "é")
	f.Fuzz(func(t *testing.T, text string) {
		checkFeatureScan(t, text)
	})
}

// base58Words are eachBase58Token's words.
func base58Words(s string) (out [][2]int) {
	eachBase58Token(s, func(a, b int) { out = append(out, [2]int{a, b}) })
	return out
}

// BenchmarkFeatureScan is the own detectors' per-byte pass alone, and the
// reference it replaced.
func BenchmarkFeatureScan(b *testing.B) {
	bodies := benchBodies()
	for _, name := range []string{"json", "code", "nokw"} {
		text := string(bodies[name])
		for _, f := range []struct {
			name string
			fn   func(string) (uint32, [][2]int)
		}{{"fast", featureScan}, {"ref", featureScanRef}} {
			b.Run(name+"/"+f.name, func(b *testing.B) {
				b.SetBytes(int64(len(text)))
				cpu := cpuTime()
				for b.Loop() {
					f.fn(text)
				}
				reportCPU(b, cpuTime()-cpu, len(text))
			})
		}
	}
}

// featureScanRef is featureScan as it was before its fast paths: the
// reference the test holds it to.
//
// featureScan is features and, when fWords is set, the spans of s that
// hold the phrases: each starts and ends where mnemonics cuts a run, so
// that mnemonics reads the same runs in them as in s.
func featureScanRef(s string) (f uint32, phrases [][2]int) {
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
		if c >= 0x80 {
			f |= fAnyHigh
			if i > 0 && tokenBytes[s[i-1]] || i+1 < len(s) && tokenBytes[s[i+1]] {
				f |= fMixedScript
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
	n := 0
	for i := 0; i <= len(s); i++ {
		if i < len(s) && b64Chars[s[i]] {
			n++
			continue
		}
		if n >= minBase64Run {
			f |= fB64Run
		}
		if n >= minHexKeyRun {
			f |= fLongRun
		}
		n = 0
	}
	var sp featureMarks
	spelledBytes(s, &sp)
	f |= sp.f
	return f, phrases
}
