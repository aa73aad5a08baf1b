package rules

import (
	"errors"
	"strings"
)

// errBadPath is returned by cleanPath; a request whose path it refuses matches no entry
// that restricts paths.
var errBadPath = errors.New("bad path")

// cleanPath returns the percent-decoded form of an escaped URL path (as on the wire, e.g.
// from url.URL.EscapedPath) for prefix matching, or errBadPath when the path could escape
// a prefix on some server: a dot segment ("..", ".", also spelled "%2e%2E", with a
// backslash as separator, or with ";params" as in "..;"), a double-encoded dot, slash,
// backslash or percent ("%252e"), a broken escape, or a control character. Well-behaved
// clients remove dot segments before sending (RFC 3986 section 5.2.4), so refusing
// rather than resolving them costs nothing and leaves no gap between what is checked and
// what an upstream server routes on.
func cleanPath(p string) (string, error) {
	if p == "" || p[0] != '/' {
		return "", errBadPath
	}
	var b strings.Builder
	b.Grow(len(p))
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c == '%' {
			if i+2 >= len(p) || !ishex(p[i+1]) || !ishex(p[i+2]) {
				return "", errBadPath
			}
			c = unhex(p[i+1])<<4 | unhex(p[i+2])
			i += 2
		}
		if c < 0x20 || c == 0x7f {
			return "", errBadPath
		}
		b.WriteByte(c)
	}
	d := b.String()
	// What a server that decodes twice would see as '.', '/', '\' or another escape.
	for i := 0; i+2 < len(d); i++ {
		if d[i] == '%' && ishex(d[i+1]) && ishex(d[i+2]) {
			switch unhex(d[i+1])<<4 | unhex(d[i+2]) {
			case '.', '/', '\\', '%':
				return "", errBadPath
			}
		}
	}
	for seg := range strings.FieldsFuncSeq(d, func(r rune) bool { return r == '/' || r == '\\' }) {
		// Servlet containers drop ";params" from a segment before resolving dots.
		seg, _, _ = strings.Cut(seg, ";")
		if seg == "." || seg == ".." {
			return "", errBadPath
		}
	}
	return d, nil
}

func ishex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}
