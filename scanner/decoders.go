package scanner

import (
	"bytes"
	"io"
	"mime/quotedprintable"
	"strconv"
	"strings"
	"unicode/utf8"
)

// More layers a sender may wrap a secret in, besides base64, plain hex and
// one level of percent-encoding (layers.go). Each decoder reports false
// when the text does not hold its encoding, cheaply: a text without any
// costs a byte scan or an Index.

const (
	encHexSep  = "hex-separated"
	encEscapes = "escapes"
	encQP      = "quoted-printable"
	// maxPercentLevels are the percent layers peeled as one: %2567 is
	// %67 is g.
	maxPercentLevels = 3
	// minHexPairs is the shortest separated hex run decoded.
	minHexPairs = 16
)

// percentLevels undoes up to maxPercentLevels of percent-encoding and
// returns the levels peeled.
func percentLevels(s string) (string, int) {
	n := 0
	for n < maxPercentLevels && hasPercent(s) {
		d := percentDecode(s)
		if d == s {
			break
		}
		s, n = d, n+1
	}
	return s, n
}

func hexVal(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// hexSepRuns finds runs of hex pairs with one separator between them
// ("41-4b-…", "41:4b", "41 4b", "\x41\x4b", "0x41, 0x4b") that decode to
// text.
func hexSepRuns(s string) []run {
	var out []run
	for i := 0; i+5 < len(s); i++ {
		// A run spans at least minHexSpan bytes of hexSepBytes: when a byte
		// that far ahead is not one, or the last one before it that is
		// not, no run starts up to there.
		if e := i + minHexSpan - 1; e < len(s) {
			k := e
			for k > i && hexSepBytes[s[k]] {
				k--
			}
			if k > i || !hexSepBytes[s[i]] {
				i = k
				continue
			}
		}
		// What follows a pair is the rarest byte: test it first.
		if !afterPair[s[i+2]] || !isHexByte[s[i]] || !isHexByte[s[i+1]] {
			continue
		}
		// The separator is what follows the first pair; a prefix form is
		// what precedes it.
		var prefix, sep string
		switch {
		case i >= 2 && s[i-2] == '\\' && s[i-1] == 'x':
			prefix = `\x`
		case i >= 2 && s[i-2] == '0' && (s[i-1] == 'x' || s[i-1] == 'X'):
			prefix = s[i-2 : i]
			if i+4 < len(s) && s[i+2] == ',' && s[i+3] == ' ' {
				sep = ", "
			} else if i+2 < len(s) && s[i+2] == ',' {
				sep = ","
			}
		default:
			if strings.IndexByte("-: ,", s[i+2]) < 0 {
				continue
			}
			sep = s[i+2 : i+3]
		}
		start := i - len(prefix)
		// Count the pairs first: most candidates are one pair of prose.
		pairs, j := 0, i
		for {
			pairs++
			j += 2
			k, ok := nextPair(s, j, sep, prefix)
			if !ok {
				break
			}
			j = k
		}
		if pairs >= minHexPairs {
			dec := make([]byte, 0, pairs)
			for p, k := 0, i; p < pairs; p++ {
				hi, _ := hexVal(s[k])
				lo, _ := hexVal(s[k+1])
				dec = append(dec, hi<<4|lo)
				k, _ = nextPair(s, k+2, sep, prefix)
			}
			if textual(dec) {
				out = append(out, run{start: start, end: j, enc: encHexSep, decoded: ownString(dec)})
			}
		}
		i = j - 1
	}
	return out
}

// nextPair is where the pair after the one that ends at j starts, in a
// run of pairs with sep and prefix between them; ok is false when the run
// ends at j. A list of 0x pairs may go on at the next line, as a C array
// does (xxd -i): its separator's comma then ends the line.
func nextPair(s string, j int, sep, prefix string) (int, bool) {
	k := j + len(sep) + len(prefix)
	if k+2 <= len(s) && s[j:j+len(sep)] == sep && s[j+len(sep):k] == prefix && isHexByte[s[k]] && isHexByte[s[k+1]] {
		return k, true
	}
	if prefix == "" || sep == "" || sep[0] != ',' || j+1 >= len(s) || s[j] != ',' {
		return 0, false
	}
	k = j + 1
	if s[k] == '\r' {
		k++
	}
	if k >= len(s) || s[k] != '\n' {
		return 0, false
	}
	k++
	for indent := k + 16; k < len(s) && k < indent && (s[k] == ' ' || s[k] == '\t'); k++ {
	}
	if k+len(prefix)+2 <= len(s) && s[k:k+len(prefix)] == prefix && isHexByte[s[k+len(prefix)]] && isHexByte[s[k+len(prefix)+1]] {
		return k + len(prefix), true
	}
	return 0, false
}

// isHexByte and afterPair (what may follow a pair in a separated run) are
// tables for hexSepRuns' inner loop.
var isHexByte, afterPair = func() (h, a [256]bool) {
	for c := range 256 {
		_, h[c] = hexVal(byte(c))
	}
	for _, c := range []byte("-: ,\\") {
		a[c] = true
	}
	return
}()

// hexSepBytes are the bytes of any separated hex run; minHexSpan is the
// shortest run's length (minHexPairs pairs with one-byte separators).
var hexSepBytes = func() (t [256]bool) {
	for c := range 256 {
		t[c] = isHexByte[c] || afterPair[c] || c == 'x' || c == 'X'
	}
	return
}()

const minHexSpan = minHexPairs*3 - 1

// hasEscapes reports whether s holds backslash escapes of the kinds
// unescape undoes (JSON's, \u, \x): text that is itself an escaped string.
func hasEscapes(s string) bool {
	for i := strings.IndexByte(s, '\\'); i >= 0 && i+1 < len(s); {
		switch s[i+1] {
		case '"', '\\', '/', 'u', 'n', 't', 'r':
			return true
		case '0', '1', '2', '3':
			if octalEscape(s[i:]) {
				return true
			}
		}
		n := strings.IndexByte(s[i+2:], '\\')
		if n < 0 {
			return false
		}
		i += 2 + n
	}
	return false
}

// unescape undoes JSON string escapes (with \u surrogate pairs), \xHH and
// octal \NNN, leaving malformed escapes as they are.
func unescape(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		switch e := s[i+1]; e {
		case '"', '\\', '/', '\'':
			b.WriteByte(e)
			i++
		case 'n':
			b.WriteByte('\n')
			i++
		case 't':
			b.WriteByte('\t')
			i++
		case 'r':
			b.WriteByte('\r')
			i++
		case 'b', 'f':
			b.WriteByte(' ')
			i++
		case 'x':
			if i+3 < len(s) {
				hi, ok1 := hexVal(s[i+2])
				lo, ok2 := hexVal(s[i+3])
				if ok1 && ok2 {
					b.WriteByte(hi<<4 | lo)
					i += 3
					continue
				}
			}
			b.WriteByte(c)
		case '0', '1', '2', '3':
			if !octalEscape(s[i:]) {
				b.WriteByte(c)
				continue
			}
			b.WriteByte((e-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
		case 'u':
			r, n := unicodeEscape(s[i:])
			if n == 0 {
				b.WriteByte(c)
				continue
			}
			b.WriteRune(r)
			i += n - 1
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// octalEscape reports a C-style octal escape (\147) at the start of s.
func octalEscape(s string) bool {
	return len(s) >= 4 && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' && s[3] >= '0' && s[3] <= '7'
}

// unicodeEscape reads \uXXXX (and a following low surrogate) at the start
// of s; n is 0 when there is none.
func unicodeEscape(s string) (rune, int) {
	if len(s) < 6 {
		return 0, 0
	}
	v, err := strconv.ParseUint(s[2:6], 16, 32)
	if err != nil {
		return 0, 0
	}
	r := rune(v)
	if r >= 0xd800 && r < 0xdc00 && len(s) >= 12 && s[6] == '\\' && s[7] == 'u' {
		if lo, err := strconv.ParseUint(s[8:12], 16, 32); err == nil && lo >= 0xdc00 && lo < 0xe000 {
			return (r-0xd800)<<10 + (rune(lo) - 0xdc00) + 0x10000, 12
		}
	}
	if !utf8.ValidRune(r) {
		r = utf8.RuneError
	}
	return r, 6
}

// hasQP reports whether s looks quoted-printable: two soft line breaks or
// escapes of what the encoding must escape ("=3D" for "=", "=20", "=09",
// "=0D", "=0A"), so that code with a line ending in "=" or a key=value
// whose value starts with two upper-case hex digits is not decoded for
// nothing.
func hasQP(s string) bool {
	n := 0
	for i := strings.IndexByte(s, '='); i >= 0 && i+1 < len(s); {
		if softBreak(s, i) || i+2 < len(s) && qpMust(s[i+1:i+3]) {
			if n++; n >= 2 {
				return true
			}
		}
		k := strings.IndexByte(s[i+1:], '=')
		if k < 0 {
			break
		}
		i += 1 + k
	}
	return false
}

// softBreak reports a quoted-printable soft line break at s[i]: "=" at the
// end of a long line (encoders wrap at 76), which base64's padding at the
// end of a short line is not.
func softBreak(s string, i int) bool {
	if !(i+1 < len(s) && s[i+1] == '\n' || i+2 < len(s) && s[i+1] == '\r' && s[i+2] == '\n') {
		return false
	}
	start := strings.LastIndexByte(s[:i], '\n') + 1
	return i-start >= 60
}

// qpMust reports the escapes that quoted-printable cannot do without.
func qpMust(h string) bool {
	switch h {
	case "3D", "20", "09", "0D", "0A":
		return true
	}
	return false
}

// qpDecode undoes quoted-printable, as far as it decodes.
func qpDecode(s string) string {
	out, _ := io.ReadAll(quotedprintable.NewReader(strings.NewReader(s)))
	return string(bytes.ToValidUTF8(out, []byte("?")))
}

// qpLines decodes the logical lines of s (physical lines joined at soft
// breaks) that look quoted-printable on their own, like decodeLines: one
// base64 value ending a short line in "=" must not make a whole text a
// quoted-printable layer.
func qpLines(s string) (string, bool) {
	var parts []string
	for len(s) > 0 {
		// A logical line ends at a newline not preceded by "=".
		end := 0
		for {
			i := strings.IndexByte(s[end:], '\n')
			if i < 0 {
				end = len(s)
				break
			}
			end += i + 1
			if !(end >= 2 && s[end-2] == '=' || end >= 3 && s[end-2] == '\r' && s[end-3] == '=') {
				break
			}
		}
		line := s[:end]
		s = s[end:]
		if hasQP(line) {
			if d := qpDecode(line); d != line {
				parts = append(parts, d)
			}
		}
	}
	if len(parts) == 0 {
		return "", false
	}
	return strings.Join(parts, "\n"), true
}
