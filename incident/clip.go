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

// RedactPath is a path as an incident of an unscanned request may keep it:
// a refused request was not scanned, and a path can carry a secret
// (/hook/<token>), so segments that look like data — long, or mixing letters
// and digits densely — are replaced, and the whole is clipped.
func RedactPath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		if looksLikeData(s) {
			segs[i] = "{redacted}"
		}
	}
	return Clip(strings.Join(segs, "/"), maxRedactedPath+len(cutMark))
}

// looksLikeData reports whether a path segment is more likely a token or an
// encoded payload than a name: long, or 16+ characters with both letters and
// digits and few repeats.
func looksLikeData(s string) bool {
	if len(s) > 40 {
		return true
	}
	if len(s) < 16 {
		return false
	}
	var letters, digits int
	seen := map[rune]bool{}
	for _, c := range s {
		switch {
		case unicode.IsDigit(c):
			digits++
		case unicode.IsLetter(c):
			letters++
		}
		seen[c] = true
	}
	return letters > 0 && digits > 0 && len(seen) >= len(s)/2
}
