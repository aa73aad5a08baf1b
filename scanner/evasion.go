package scanner

import (
	"encoding/hex"
	"regexp"
	"strings"
)

var (
	// deepPercentRE is an escape that survives two rounds of decoding
	// ("%2525" then two hex digits in the text as scanned): text encoded
	// three and more times.
	deepPercentRE = regexp.MustCompile(`%25(?:25)+[0-9A-Fa-f]{2}`)
	// delimitedHexRE is hex bytes split by one delimiter: 41-4b-49 or 41:4b:49.
	delimitedHexRE = regexp.MustCompile(`\b[0-9A-Fa-f]{2}(?:([-:., ])[0-9A-Fa-f]{2}){11,}\b`)
)

// detectEvasion reports text hidden in encodings that nothing legitimate
// uses for text: percent-encoding three and more layers deep (a nested
// redirect URL is encoded twice at most), and printable text spelled as
// delimited hex bytes (MAC addresses and fingerprints are short or binary).
func detectEvasion(text string, emit func(Finding)) {
	if strings.Contains(text, "%2525") {
		for _, m := range deepPercentRE.FindAllStringIndex(text, -1) {
			f := secretAt(RuleMultiEncoded, text, m[0], m[1])
			f.Snippet = "percent-encoded three or more times: " + f.Snippet
			emit(f)
		}
	}
	eachHexChain(text, func(ws, we int) {
		for _, m := range delimitedHexRE.FindAllStringSubmatchIndex(text[ws:we], -1) {
			v := text[ws+m[0] : ws+m[1]]
			sep := text[ws+m[2] : ws+m[3]]
			b, err := hex.DecodeString(strings.ReplaceAll(v, sep, ""))
			if err != nil || !printableASCII(b) || strings.Count(v, sep) != len(b)-1 {
				continue
			}
			f := secretAt(RuleMultiEncoded, text, ws+m[0], ws+m[1])
			f.Snippet = "text as delimited hex: " + f.Snippet
			emit(f)
		}
	})
}

// eachHexChain calls fn with the windows of s where delimitedHexRE may
// match, so that it does not read a whole large text: around each chain of
// twelve and more hex pairs split by its delimiters, widened over the word
// bytes on either side and one byte more, so that \b sees at the window's
// edges what it sees in s. Overlapping windows are joined.
func eachHexChain(s string, fn func(ws, we int)) {
	delim := func(c byte) bool { return c == '-' || c == ':' || c == '.' || c == ',' || c == ' ' }
	ps, pe := -1, -1 // the pending window
	for i := 0; i+1 < len(s); i++ {
		if !isHexByte[s[i]] || !isHexByte[s[i+1]] {
			continue
		}
		j, pairs := i, 1 // j: the last pair's start
		for j+4 < len(s) && delim(s[j+2]) && isHexByte[s[j+3]] && isHexByte[s[j+4]] {
			j += 3
			pairs++
		}
		if pairs < 12 {
			continue
		}
		ws, we := i, j+2
		for ws > 0 && isWordByte(s[ws-1]) {
			ws--
		}
		for we < len(s) && isWordByte(s[we]) {
			we++
		}
		ws, we = max(0, ws-1), min(len(s), we+1)
		if ps >= 0 && ws <= pe {
			pe = max(pe, we)
		} else {
			if ps >= 0 {
				fn(ps, pe)
			}
			ps, pe = ws, we
		}
		i = j // on from the last pair's second digit
	}
	if ps >= 0 {
		fn(ps, pe)
	}
}

// isWordByte is a byte \b counts as a word's.
func isWordByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_'
}

// printableASCII reports bytes that are all printable ASCII (space to ~).
func printableASCII(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c > 0x7e {
			return false
		}
	}
	return len(b) > 0
}

// detectPathEntropy reports request path segments that read as random
// data: 24 characters or more mixing upper case, lower case and digits,
// with high entropy. Hashes (hex), UUIDs and slugs do not mix all three.
// It alerts by default: object ids in paths can look like this too.
func detectPathEntropy(text string, emit func(Finding)) {
	if !strings.HasPrefix(text, "/") {
		return // the query lines of the URL: url-entropy-query reads those
	}
	for _, seg := range strings.Split(text, "/") {
		if len(seg) < 24 || entropy(seg) < 4.0 || !mixedCase(seg) {
			continue
		}
		emit(Finding{Kind: KindExfilLink, Rule: RuleURLEntropyPath, secret: secretText(seg), Snippet: "path segment " + mask(seg)})
	}
}

// mixedCase reports upper case, lower case and digits all in s.
func mixedCase(s string) bool {
	var up, low, dig bool
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= 'A' && c <= 'Z':
			up = true
		case c >= 'a' && c <= 'z':
			low = true
		case c >= '0' && c <= '9':
			dig = true
		}
	}
	return up && low && dig
}
