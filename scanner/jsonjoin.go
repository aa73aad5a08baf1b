package scanner

import (
	"strconv"
	"strings"
)

// A JSON array of short strings may be a token cut in pieces
// (["g","h","p","_",…], ["ghp_","AbCd",…]): each piece is its own segment,
// and no pattern sees the token.
const (
	maxJoinPiece  = 8  // the longest string that counts as a piece
	minJoinPieces = 4  // the fewest pieces in a row that are joined
	minJoinedLen  = 16 // and the fewest bytes they hold
)

// joinedArrays is, for every run of minJoinPieces or more consecutive
// elements of one JSON array in segs that are strings of at most
// maxJoinPiece bytes, a segment of their texts joined, so that a token cut
// into such pieces is read whole ("json:$.x[3:40]" says where).
func joinedArrays(segs []*segment) []*segment {
	var out []*segment
	var b strings.Builder
	start, n := 0, 0 // the run: segs[start:start+n]
	prefix, idx := "", -1
	flush := func() {
		if n >= minJoinPieces && b.Len() >= minJoinedLen {
			first := segs[start]
			out = append(out, &segment{where: prefix + "[" + strconv.Itoa(idx-n+1) + ":" + strconv.Itoa(idx+1) + "]",
				chain: first.chain, text: b.String(), body: true})
		}
		b.Reset()
		n = 0
	}
	for i, g := range segs {
		p, k, ok := arrayElement(g)
		if !ok || len(g.text) > maxJoinPiece {
			flush()
			continue
		}
		if n > 0 && (p != prefix || k != idx+1) {
			flush()
		}
		if n == 0 {
			start, prefix = i, p
		}
		b.WriteString(g.text)
		n, idx = n+1, k
	}
	flush()
	return out
}

// arrayElement splits a body JSON segment's path into its array's path and
// its index ("json:$.x[3]": "json:$.x", 3); ok is false for an object's
// value or a decoded layer.
func arrayElement(g *segment) (string, int, bool) {
	w := g.where
	if !g.body || g.depth > 0 || len(w) < 3 || w[len(w)-1] != ']' || !strings.HasPrefix(w, "json:") {
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
