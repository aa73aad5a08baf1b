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
	if !delimitedHexStart(text) {
		return
	}
	for _, m := range delimitedHexRE.FindAllStringSubmatchIndex(text, -1) {
		v := text[m[0]:m[1]]
		sep := text[m[2]:m[3]]
		b, err := hex.DecodeString(strings.ReplaceAll(v, sep, ""))
		if err != nil || !printableASCII(b) || strings.Count(v, sep) != len(b)-1 {
			continue
		}
		f := secretAt(RuleMultiEncoded, text, m[0], m[1])
		f.Snippet = "text as delimited hex: " + f.Snippet
		emit(f)
	}
}

// delimitedHexStart reports three hex bytes split by the same delimiter
// somewhere in s: the cheap test before delimitedHexRE.
func delimitedHexStart(s string) bool {
	for i := 0; i+7 < len(s); i++ {
		d := s[i+2]
		if (d == '-' || d == ':' || d == '.' || d == ',' || d == ' ') && s[i+5] == d &&
			isHexStr(s[i:i+2]) && isHexStr(s[i+3:i+5]) && isHexStr(s[i+6:i+8]) {
			return true
		}
	}
	return false
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
