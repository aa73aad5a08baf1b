package incident

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Bounds on what an incident keeps of attacker-controlled text, so that a
// sandbox cannot grow the database with huge paths or headers.
const (
	MaxShort   = 256
	MaxPath    = 2048
	MaxSnippet = 1024
)

// cutMark ends a clipped text.
const cutMark = "…"

// Bounded is in as it may be stored: the path loses anything from '?' or
// '#' on (a raw query string is where secrets travel), and every text field
// is clipped to its bound. The triage is left as it is.
func (in Incident) Bounded() Incident {
	in.Path = WithoutQuery(in.Path)
	for _, f := range []*string{&in.Tenant, &in.Class, &in.Run, &in.Kind, &in.Reason, &in.Action,
		&in.Host, &in.Method, &in.Client, &in.Rule, &in.Where, &in.Decoding, &in.Fingerprint} {
		*f = Clip(*f, MaxShort)
	}
	in.Path = Clip(in.Path, MaxPath)
	in.Snippet = Clip(in.Snippet, MaxSnippet)
	return in
}

// WithoutQuery cuts p at its first '?' or '#'.
func WithoutQuery(p string) string {
	if i := strings.IndexAny(p, "?#"); i >= 0 {
		return p[:i]
	}
	return p
}

// Clip cuts s to at most n bytes on a rune boundary, marking the cut.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := max(n-len(cutMark), 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + cutMark
}

// maxRedactedPath bounds the path RedactPath keeps.
const maxRedactedPath = 256

// redacted replaces what looks like data.
const redacted = "{redacted}"

// RedactPath is a path as an incident of an unscanned request may keep it:
// a refused request was not scanned, and a path can carry a secret
// (/hook/<token>), so segments that look like data (see looksLikeData) are
// replaced, and the whole is clipped.
func RedactPath(p string) string {
	return Clip(redactParts(p, "/"), maxRedactedPath+len(cutMark))
}

// RedactHost is a host as an incident of a refused request may keep it,
// valid or not: the labels that look like data are replaced (a denied name
// can carry a secret in a label, a malformed one anything at all), the
// domain it aimed at is kept, and the whole is clipped to MaxShort.
func RedactHost(h string) string {
	return Clip(redactParts(h, "."), MaxShort)
}

// RedactHostLabels is RedactHost with the n leftmost labels of h replaced
// as one, for a name whose labels a scan found data in.
func RedactHostLabels(h string, n int) string {
	labels := strings.Split(h, ".")
	if n <= 0 || n >= len(labels) {
		return RedactHost(h)
	}
	return RedactHost(redacted + "." + strings.Join(labels[n:], "."))
}

// redactParts replaces every part of s between seps that looks like data.
func redactParts(s, sep string) string {
	parts := strings.Split(s, sep)
	for i, p := range parts {
		if looksLikeData(p) {
			parts[i] = redacted
		}
	}
	return strings.Join(parts, sep)
}

// looksLikeData reports whether a path segment or host label is more likely
// a token or an encoded payload than a name: the whole of it, or one of the
// words it is made of ("token=…", "user:…@", "….json"), is shaped like one
// (dataWord).
func looksLikeData(s string) bool {
	if dataWord(s) {
		return true
	}
	for w := range strings.FieldsFuncSeq(s, notWordChar) {
		if len(w) < len(s) && dataWord(w) {
			return true
		}
	}
	return false
}

// notWordChar separates the words of a segment: what no token alphabet
// (hex, base32, base64url) uses besides '-' and '_'.
func notWordChar(c rune) bool {
	return !(c == '-' || c == '_' || c < utf8.RuneSelf && (unicode.IsLetter(c) || unicode.IsDigit(c)))
}

// dataWord: long (over 40 bytes); or 16+ hex digits with nothing but '-'
// between them (a UUID, a 40-hex token, a card number); or 16+ characters
// with few repeats that have both letters and digits, or that are letters
// in both cases with neither case rare (a random token need not hold a
// digit: 36 random alphanumerics hold none once in 600 tries, while a
// CamelCase name has one capital a word), or that are all capitals (an
// AWS key id is digit-free once in 28).
func dataWord(s string) bool {
	if len(s) > 40 {
		return true
	}
	if len(s) < 16 {
		return false
	}
	var upper, lower, digits, hex int
	onlyHex := true
	seen := map[rune]bool{}
	for _, c := range s {
		switch {
		case unicode.IsDigit(c):
			digits++
		case unicode.IsUpper(c):
			upper++
		case unicode.IsLetter(c):
			lower++
		}
		switch {
		case '0' <= c && c <= '9', 'a' <= c && c <= 'f', 'A' <= c && c <= 'F':
			hex++
		case c != '-':
			onlyHex = false
		}
		seen[c] = true
	}
	if onlyHex && hex >= 16 && digits > 0 {
		return true
	}
	letters := upper + lower
	switch {
	case lower == 0 && upper >= 16:
		return len(seen) >= len(s)/3 // base32 repeats more than base62
	case len(seen) < len(s)/2:
		return false
	case letters > 0 && digits > 0:
		return true
	default:
		return upper > 0 && lower > 0 && upper >= letters/4 && lower >= letters/4
	}
}
