package scanner

import (
	"html"
	"strings"
)

// Layers of text written so that no pattern sees it whole, which its
// receiver reads back with a line of code.
const (
	encSpelled  = "spelled"  // a character at a time with one separator between
	encEntities = "entities" // HTML character references (&#103;&#x68;)
	encCodes    = "codes"    // character codes in decimal (103,104,112)
	encOctal    = "octal"    // character codes in octal (147 150 160)
	encBinary   = "binary"   // character codes in binary (01100111 01101000, 0b1100111)
)

// minSpelled is the fewest characters a spelled run has: the shortest
// secrets the rules find are about that long, and prose and code hold no
// run of 16 single characters between one separator.
const minSpelled = 16

// maxSpelledSep is the longest separator between a spelled run's
// characters (`", "` in a JSON array of one-character strings).
const maxSpelledSep = 4

// spelledRuns reads every run of minSpelled or more characters written one
// at a time between the same separator ("g h p _ …", "g-h-p-…", one per
// line, `["g","h","p"…]`) as the characters alone, each after the
// spelledContext bytes before it (a key's name), one per line; ok is false
// when s holds none. A run starts at a letter or digit with none beside it,
// its separator holds neither, its characters are any visible ASCII, and
// it holds a letter: a run of digits alone (a data array's) is no token
// the rules read, and payment cards with spaces are found as they are.
func spelledRuns(s string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if !isAlnum(s[i]) || i > 0 && isAlnum(s[i-1]) || i+1 >= len(s) || isAlnum(s[i+1]) {
			continue
		}
		run, end, ok := spelledRun(s, i)
		if !ok {
			// A later start in what was read gives no longer a run, but
			// its last character may start one with another separator.
			i = max(i, end-1)
			continue
		}
		keepRun(&b, s, i, run)
		i = end - 1
	}
	return b.String(), b.Len() > 0
}

// spelledContext is how many bytes before a spelled run its layer keeps.
const spelledContext = 64

// keepRun writes to b the run read at s[i], after the spelledContext bytes
// before it, when it holds a letter.
func keepRun(b *strings.Builder, s string, i int, run string) {
	if strings.IndexFunc(run, func(r rune) bool { return r|0x20 >= 'a' && r|0x20 <= 'z' }) >= 0 {
		b.WriteString(s[max(0, i-spelledContext):i])
		b.WriteString(run)
		b.WriteByte('\n')
	}
}

// spelledRun reads a spelled run that starts at s[i]: its separator is
// what stands between s[i] and the next letter or digit. It returns the
// run's characters and where it ends; ok is false when it is shorter than
// minSpelled, and the end is then where its last character is (which may
// start a run of its own).
func spelledRun(s string, i int) (string, int, bool) {
	k := 1
	for i+1+k < len(s) && !isAlnum(s[i+1+k]) {
		if k++; k > maxSpelledSep {
			return "", 0, false
		}
	}
	sep := s[i+1 : i+1+k]
	n, j := 1, i+1+k // characters, and where the next one is
	for j < len(s) && visibleByte(s[j]) && strings.HasPrefix(s[j+1:], sep) {
		n, j = n+1, j+1+k
	}
	if j < len(s) && visibleByte(s[j]) && (j+1 == len(s) || !isAlnum(s[j+1])) {
		n, j = n+1, j+1 // the last character, with no separator after it
	}
	if n < minSpelled {
		return "", i + (n-1)*(1+k), false
	}
	run := make([]byte, 0, n)
	for c := i; c < j; c += 1 + k {
		run = append(run, s[c])
	}
	return string(run), j, true
}

// charCodeRuns reads every run of minSpelled or more character codes in
// decimal (32 to 126) between the same separator ("103,104,112", a JSON
// array, String.fromCharCode's arguments) as the text they spell, each
// after the spelledContext bytes before it, one per line; ok is false when
// s holds none. Like spelledRuns, a run must hold a letter.
func charCodeRuns(s string) (string, bool) {
	return codeRuns(s, func(c byte) bool { return c >= '1' && c <= '9' }, charCode, nil)
}

// octalCodeRuns is charCodeRuns for codes of three octal digits (040 to
// 176: `od -b`, "\147" without its backslash).
func octalCodeRuns(s string) (string, bool) {
	return codeRuns(s, func(c byte) bool { return c == '0' || c == '1' }, octalCode, nil)
}

// binaryRuns is charCodeRuns for codes in binary: 6 to 8 digits, each with
// 0b before it or none (Python's bin() and format(c, "08b"), `xxd -b`),
// and a string of 8 digits a character with nothing between them.
func binaryRuns(s string) (string, bool) {
	return codeRuns(s, func(c byte) bool { return c == '0' || c == '1' }, binaryCode, binaryString)
}

// codeRuns reads the runs of codes that start at a byte that starts one
// and has no letter or digit before it; whole, when given, reads a run
// written with nothing between its codes first.
func codeRuns(s string, starts func(byte) bool, code func(string) (byte, int), whole func(string, int) (string, int, bool)) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if !starts(s[i]) || i > 0 && isAlnum(s[i-1]) {
			continue
		}
		if whole != nil {
			if run, end, ok := whole(s, i); ok {
				keepRun(&b, s, i, run)
				i = end - 1
				continue
			}
		}
		run, end, ok := codeRun(s, i, code)
		if !ok {
			i = max(i, end-1) // as in spelledRuns
			continue
		}
		keepRun(&b, s, i, run)
		i = end - 1
	}
	return b.String(), b.Len() > 0
}

// codeRun reads a run of character codes (read by code) that starts at
// s[i]: the text they spell and where the run ends; ok is false when it is
// shorter than minSpelled, and the end is then where its last code is.
func codeRun(s string, i int, code func(string) (byte, int)) (string, int, bool) {
	var run []byte
	var sep string
	j, last := i, i // where the next number is, and the last one read
	for {
		c, n := code(s[j:])
		if n == 0 {
			break
		}
		run, last = append(run, c), j
		j += n
		if sep == "" {
			k := 0
			for j+k < len(s) && k <= maxSpelledSep && !isAlnum(s[j+k]) {
				k++
			}
			if k == 0 || k > maxSpelledSep {
				break
			}
			sep = s[j : j+k]
		}
		if !strings.HasPrefix(s[j:], sep) {
			break
		}
		j += len(sep)
	}
	if len(run) < minSpelled {
		return "", last, false
	}
	return string(run), j, true
}

// octalCode is charCode for three octal digits.
func octalCode(s string) (c byte, n int) {
	if len(s) < 3 || len(s) > 3 && isAlnum(s[3]) {
		return 0, 0
	}
	v := 0
	for _, d := range []byte(s[:3]) {
		if d < '0' || d > '7' {
			return 0, 0
		}
		v = v*8 + int(d-'0')
	}
	if !printableCode(v) {
		return 0, 0
	}
	return byte(v), 3
}

// binaryCode is charCode for 6 to 8 binary digits, 0b before them or not.
func binaryCode(s string) (c byte, n int) {
	if len(s) > 2 && s[0] == '0' && s[1]|0x20 == 'b' {
		n = 2
	}
	v, d := 0, n
	for d < len(s) && d-n <= 8 && (s[d] == '0' || s[d] == '1') {
		v, d = v<<1|int(s[d]-'0'), d+1
	}
	if d-n < 6 || d-n > 8 || !printableCode(v) && !(d-n == 8 && lineCode(v)) || d < len(s) && isAlnum(s[d]) {
		return 0, 0
	}
	return byte(v), d
}

// printableCode reports a code of printable ASCII; lineCode one of a tab
// or a line break, which a text's codes of 8 binary digits hold too.
func printableCode(v int) bool { return v >= 32 && v <= 126 }
func lineCode(v int) bool      { return v == '\t' || v == '\n' || v == '\r' }

// binaryString reads, at s[i], minSpelled or more characters written as 8
// binary digits each with nothing between them; ok is false when the run
// of binary digits there is no such, and end is then where it ends.
func binaryString(s string, i int) (string, int, bool) {
	j := i
	for j < len(s) && (s[j] == '0' || s[j] == '1') {
		j++
	}
	if j-i < 8*minSpelled || (j-i)%8 != 0 || j < len(s) && isAlnum(s[j]) {
		return "", j, false
	}
	run := make([]byte, 0, (j-i)/8)
	for k := i; k < j; k += 8 {
		v := 0
		for _, d := range []byte(s[k : k+8]) {
			v = v<<1 | int(d-'0')
		}
		if !printableCode(v) && !lineCode(v) {
			return "", j, false
		}
		run = append(run, byte(v))
	}
	return string(run), j, true
}

// charCode reads a printable ASCII byte's code in decimal (32 to 126) at
// the start of s, not followed by another letter or digit; n is 0 when
// there is none.
func charCode(s string) (c byte, n int) {
	v := 0
	for n < len(s) && n < 4 && s[n] >= '0' && s[n] <= '9' {
		v, n = v*10+int(s[n]-'0'), n+1
	}
	if n < 2 || n > 3 || !printableCode(v) || n < len(s) && isAlnum(s[n]) {
		return 0, 0
	}
	return byte(v), n
}

// around is s from a run's reach before span (the blocks the feature pass
// marked) to its reach after: a run that has a marked block in it lies
// there, with its context.
func around(s string, span [2]int) string {
	const reach = minSpelled*(3+maxSpelledSep) + spelledContext
	return s[max(0, span[0]-reach):min(len(s), span[1]+reach)]
}

func visibleByte(c byte) bool { return c > ' ' && c < 0x7F }

// hasCharRef reports an HTML character reference's start.
func hasCharRef(s string) bool { return strings.Contains(s, "&#") }

// unescapeHTML is s with its HTML character references read.
func unescapeHTML(s string) string { return html.UnescapeString(s) }
