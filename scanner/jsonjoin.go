package scanner

import (
	"strconv"
	"strings"
)

// A token cut in pieces across the strings of a JSON value
// (["g","h","p","_",…], ["ghp_","AbCd",…], {"a":"ghp_AbCd","b":"EfGh…"})
// is in no one segment, and no pattern sees it whole. joinedPieces joins
// such pieces.
const (
	maxArrayPiece  = 8  // the longest array string that counts as a piece
	minArrayPieces = 4  // the fewest array pieces in a row that are joined
	minMemberPiece = 4  // an object's string values: 4 to 64 letters, digits, _ or -
	maxMemberPiece = 64 //
	minJoinedLen   = 16 // the fewest bytes joined pieces hold
)

// joinedPieces is, for the body JSON segments in segs, a segment of the
// texts of each run of pieces joined, so that a token cut into them is
// read whole:
//   - minArrayPieces or more consecutive elements of one array that are
//     strings of at most maxArrayPiece bytes ("json:$.x[3:40]");
//   - two or more consecutive members of one object whose values are
//     token-like strings (tokenPiece: no prose, path or URL), as a secret
//     split across fields is ("json:$.x.*").
func joinedPieces(segs []*segment) []*segment {
	var out []*segment
	var b strings.Builder
	n := 0                     // pieces in the run
	parent, array := "", false // the run's container
	first, next := 0, 0        // array runs: the first index, and the one that continues the run
	var chain []string         // the decoding of the run's first piece (a compressed body's)
	flush := func() {
		if array && n >= minArrayPieces && b.Len() >= minJoinedLen {
			out = append(out, &segment{where: parent + "[" + strconv.Itoa(first) + ":" + strconv.Itoa(next) + "]", chain: chain, text: b.String(), body: true})
		}
		if !array && n >= 2 && b.Len() >= minJoinedLen {
			out = append(out, &segment{where: parent + ".*", chain: chain, text: b.String(), body: true})
		}
		b.Reset()
		n = 0
	}
	for _, g := range segs {
		if !g.body || g.depth > 0 || !strings.HasPrefix(g.where, "json:") {
			flush()
			continue
		}
		if p, k, ok := arrayElement(g.where); ok && len(g.text) <= maxArrayPiece {
			if n > 0 && (!array || p != parent || k != next) {
				flush()
			}
			if n == 0 {
				parent, array, first, chain = p, true, k, g.chain
			}
			b.WriteString(g.text)
			n, next = n+1, k+1
			continue
		}
		if p, v, ok := objectMember(g); ok && tokenPiece(v) {
			if n > 0 && (array || p != parent) {
				flush()
			}
			if n == 0 {
				parent, array, chain = p, false, g.chain
			}
			b.WriteString(v)
			n++
			continue
		}
		flush()
	}
	flush()
	return out
}

// arrayElement splits a JSON segment's path into its array's path and its
// index ("json:$.x[3]": "json:$.x", 3); ok is false for an object's value.
func arrayElement(w string) (string, int, bool) {
	if len(w) < 3 || w[len(w)-1] != ']' {
		return "", 0, false
	}
	open := strings.LastIndexByte(w, '[')
	if open < 0 {
		return "", 0, false
	}
	k, err := strconv.Atoi(w[open+1 : len(w)-1])
	if err != nil {
		return "", 0, false
	}
	return w[:open], k, true
}

// objectMember splits a JSON segment of an object's value under a plain
// key ("json:$.x.key", text "key: value") into the object's path and the
// value.
func objectMember(g *segment) (parent, value string, ok bool) {
	i := strings.Index(g.text, ": ")
	if i <= 0 || !strings.HasSuffix(g.where, g.text[:i]) || len(g.where) <= i || g.where[len(g.where)-i-1] != '.' {
		return "", "", false
	}
	return g.where[:len(g.where)-i-1], g.text[i+2:], true
}

// tokenPiece reports a string that may be a piece of a token: 4 to 64
// letters, digits, '_' and '-'.
func tokenPiece(v string) bool {
	if len(v) < minMemberPiece || len(v) > maxMemberPiece {
		return false
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; !isAlnum(c) && c != '_' && c != '-' {
			return false
		}
	}
	return true
}
