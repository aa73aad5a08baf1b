package match

import (
	"errors"
	"strings"
)

// ErrBadPath is returned by CleanPath; a request whose path it refuses matches no entry
// (nor binding) that restricts paths.
var ErrBadPath = errors.New("bad path")

// CleanPath returns the percent-decoded form of an escaped URL path (as on the wire, e.g.
// from url.URL.EscapedPath) for prefix matching, or ErrBadPath when the path could escape
// a prefix on some server: a dot segment ("..", ".", also spelled "%2e%2E", with a
// backslash as separator, or with ";params" as in "..;"), a double-encoded dot, slash,
// backslash or percent ("%252e"), a broken escape, or a control character. Well-behaved
// clients remove dot segments before sending (RFC 3986 section 5.2.4), so refusing
// rather than resolving them costs nothing and leaves no gap between what is checked and
// what an upstream server routes on.
func CleanPath(p string) (string, error) {
	if p == "" || p[0] != '/' {
		return "", ErrBadPath
	}
	var b strings.Builder
	b.Grow(len(p))
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c == '%' {
			if i+2 >= len(p) || !ishex(p[i+1]) || !ishex(p[i+2]) {
				return "", ErrBadPath
			}
			c = unhex(p[i+1])<<4 | unhex(p[i+2])
			i += 2
		}
		if c < 0x20 || c == 0x7f {
			return "", ErrBadPath
		}
		b.WriteByte(c)
	}
	d := b.String()
	// What a server that decodes twice would see as '.', '/', '\' or another escape.
	for i := 0; i+2 < len(d); i++ {
		if d[i] == '%' && ishex(d[i+1]) && ishex(d[i+2]) {
			switch unhex(d[i+1])<<4 | unhex(d[i+2]) {
			case '.', '/', '\\', '%':
				return "", ErrBadPath
			}
		}
	}
	for seg := range strings.FieldsFuncSeq(d, func(r rune) bool { return r == '/' || r == '\\' }) {
		// Servlet containers drop ";params" from a segment before resolving dots.
		seg, _, _ = strings.Cut(seg, ";")
		if seg == "." || seg == ".." {
			return "", ErrBadPath
		}
	}
	return d, nil
}

// PathUnder reports whether path (CleanPath's output) lies under prefix (a cleaned
// prefix). A prefix ending in "/" is a plain prefix; one without ends at a segment
// boundary, so that "/v1" covers "/v1" and "/v1/x" but not "/v10" or "/v1.bak".
func PathUnder(path, prefix string) bool {
	if !strings.HasPrefix(path, prefix) {
		return false
	}
	return strings.HasSuffix(prefix, "/") || len(path) == len(prefix) || path[len(prefix)] == '/'
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
