package scanner

import (
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// A token cut at the edges of a request's fields (?a=ghp_AbCd&b=EfGh…,
// /ghp_AbCd/EfGh…, X-A: ghp_AbCd and X-B: EfGh…, a cookie per piece, a
// form field per piece) is in no one segment, and no pattern sees it
// whole. fieldJoins joins such pieces, in the order the request gives
// them, where a rule's keyword says a token may start.

// encJoinedFields names the layer of field pieces joined.
const encJoinedFields = "joined-fields"

const (
	maxFieldPiece  = 128      // the longest value that counts as a piece
	maxFieldPieces = 64       // the pieces of one family looked at
	maxJoinedSpan  = 320      // the longest run of pieces joined (longer than any token format)
	maxSpanPieces  = 12       // and the most pieces in it
	maxJoinedText  = 16 << 10 // the joined runs of one family, at most
)

// fieldJoins is a segment for each family of the request's fields whose
// pieces join around a keyword (joiner.spans): the path's segments, the
// query's values, its names, each parameter's name and value
// (?ghp_AbCd=EfGh…), header values (names is h's, sorted: net/http keeps
// no order; so in that order and in reverse), cookie values, and each
// cookie's name and value.
func (s *Scanner) fieldJoins(u *url.URL, h http.Header, names []string) []*segment {
	j := joiner{kw: s.Rules.eng.kw, inToken: s.Rules.eng.inToken}
	if u != nil {
		j.start("url:path.*")
		for p := range strings.SplitSeq(u.Path, "/") {
			j.add(p)
		}
		j.end()
		if u.RawQuery != "" {
			for part := range 3 { // values, names, each name with its value
				j.start("url:query.*")
				for kv := range strings.SplitSeq(u.RawQuery, "&") {
					k, v, _ := strings.Cut(kv, "=")
					switch part {
					case 0:
						j.add(queryUnescape(v))
					case 1:
						j.add(queryUnescape(k))
					default:
						j.pair(queryUnescape(k), queryUnescape(v))
					}
				}
				j.end()
			}
		}
	}
	if len(h) > 0 {
		// By name and in reverse: a token in two headers is joined
		// whichever of their names sorts first.
		for _, backward := range [2]bool{false, true} {
			j.start("header:*")
			for i := range names {
				k := names[i]
				if backward {
					k = names[len(names)-1-i]
				}
				if c := http.CanonicalHeaderKey(k); c != "Proxy-Authorization" && c != "Cookie" {
					for _, v := range h[k] {
						j.add(v)
					}
				}
			}
			j.end()
		}
		if cookies := h.Values("Cookie"); len(cookies) > 0 {
			for part := range 2 { // values, each name with its value
				j.start("header:Cookie")
				for _, line := range cookies {
					for c := range strings.SplitSeq(line, ";") {
						name, v, _ := strings.Cut(strings.TrimSpace(c), "=")
						if part == 0 {
							j.add(v)
						} else {
							j.pair(name, v)
						}
					}
				}
				j.end()
			}
		}
	}
	return j.segments(nil, false)
}

// formJoins is fieldJoins for a form body: its values in the body's order,
// and each field's name and value.
func (s *Scanner) formJoins(body []byte, contentType string, chain []string) []*segment {
	if mt, _, _ := mime.ParseMediaType(contentType); mt != "application/x-www-form-urlencoded" {
		return nil
	}
	j := joiner{kw: s.Rules.eng.kw, inToken: s.Rules.eng.inToken}
	for part := range 2 {
		j.start("form:*")
		for kv := range strings.SplitSeq(bytesString(body), "&") {
			k, v, _ := strings.Cut(kv, "=")
			if part == 0 {
				j.add(queryUnescape(v))
			} else {
				j.pair(queryUnescape(k), queryUnescape(v))
			}
		}
		j.end()
	}
	return j.segments(chain, true)
}

// partJoins is fieldJoins for a multipart body's parts (curl -F a=… -F
// b=…): the texts of the parts read whole (segments of parts, in the
// body's order), each a value.
func (s *Scanner) partJoins(parts []*segment) []*segment {
	j := joiner{kw: s.Rules.eng.kw, inToken: s.Rules.eng.inToken}
	j.start("multipart:*")
	var chain []string
	for _, g := range parts {
		name, ok := strings.CutPrefix(g.where, "multipart:")
		if !ok || strings.ContainsAny(name, ":.[") || name == "preamble" || name == "epilogue" {
			continue // a part's header, a JSON part's string, what lies outside the parts
		}
		chain = g.chain
		j.add(strings.TrimSpace(g.text))
	}
	j.end()
	return j.segments(chain, true)
}

// encFolded names the layer of a text's lines joined (foldedLines).
const encFolded = "folded-lines"

// maxFolds bounds the folded tokens a text is looked at for: a wrapped
// base64 blob has keywords' letters in many of its lines. maxFoldLine is
// the most a folded line holds after a keyword (base64(1) folds at 76).
const (
	maxFolds    = 16
	maxFoldLine = 80
)

// foldedAfter reports whether the token that a keyword ending at end
// starts runs into a line break, with a piece on the next line: a token
// folded over lines (fold -w, a hard-wrapped message), whole in no line.
// Bytes from end to from are known to be a piece's (an earlier look read
// them). stop is where it stopped reading; limited, that it stopped at
// maxFieldPiece bytes, inside a run too long for a piece: a keyword
// further on may still be folded.
func foldedAfter(t string, end, from int) (folded bool, stop int, limited bool) {
	k := max(end, from)
	for k < len(t) && k-end < maxFieldPiece && isPieceByte(t[k]) {
		k++
	}
	if k-end >= maxFieldPiece {
		return false, k, true
	}
	stop = k
	if k < len(t) && t[k] == '\r' {
		k++
	}
	return k+1 < len(t) && t[k] == '\n' && isPieceByte(t[k+1]), stop, false
}

// foldedLines is fieldJoins for the lines around folds (where keywords end
// in tokens that a line break cuts, foldedAfter): each run of lines that
// are pieces, the first of them also the last word of a line that is not
// one ("token: ghp_AbCd" then "EfGh…"), joined around a keyword as
// joiner.spans joins; "" when none joins. Only maxJoinedSpan bytes of
// lines on either side of each fold are read.
func (s *Scanner) foldedLines(t string, folds []int) string {
	j := joiner{kw: s.Rules.eng.kw, inToken: s.Rules.eng.inToken}
	done := 0 // lines before done were read
	for _, at := range folds {
		from := max(done, at-maxJoinedSpan)
		if i := strings.LastIndexByte(t[:from], '\n'); i >= 0 || from == 0 {
			from = i + 1
		}
		to := min(len(t), at+maxJoinedSpan)
		if i := strings.IndexByte(t[to:], '\n'); i >= 0 {
			to += i
		} else {
			to = len(t)
		}
		if to <= from {
			continue
		}
		done = to
		j.start("")
		for line := range strings.SplitSeq(t[from:to], "\n") {
			line = strings.TrimRight(line, "\r")
			if line != "" && fieldPiece(line) {
				j.add(line)
				continue
			}
			j.end()
			j.seen = 0
			if i := strings.LastIndexAny(line, " \t\"'`:=(<,"); i >= 0 && i+1 < len(line) && fieldPiece(line[i+1:]) {
				j.add(line[i+1:])
			}
		}
		j.end()
	}
	if b := j.texts[""]; b != nil {
		return b.String()
	}
	return ""
}

func isPieceByte(c byte) bool {
	return isAlnum(c) || c == '_' || c == '-' || c == '.' || c == '+' || c == '/' || c == '='
}

func queryUnescape(s string) string {
	if d, err := url.QueryUnescape(s); err == nil {
		return d
	}
	return s
}

// joiner joins the runs of pieces of one family after another (start,
// add, end), and collects what it joined by where, a line each. A family
// without a keyword allocates nothing.
type joiner struct {
	kw      *keywordSet
	inToken []bool // by keyword id: one a token holds (engine.inToken)
	where   string
	run     [maxSpanRun]string // the run of pieces being added
	n       int                // pieces in run
	seen    int                // pieces of the family so far
	buf     []byte             // the run joined
	ends    [maxSpanRun]int    // where each piece of the run ends in buf
	texts   map[string]*strings.Builder
	order   []string
	tail    bool // only the spans that end with the run's last piece
}

// maxSpanRun is the most pieces of a run joined at once: a longer run is
// joined in parts that overlap by maxSpanPieces.
const maxSpanRun = 32

func (j *joiner) start(where string) { j.where, j.n, j.seen = where, 0, 0 }

// add adds a value of the family: empty values are skipped, a value that
// is no piece (fieldPiece) ends the run, and the family's pieces after
// maxFieldPieces are not read.
func (j *joiner) add(p string) {
	if p == "" || j.seen >= maxFieldPieces {
		return
	}
	j.seen++
	if !fieldPiece(p) {
		j.end()
		return
	}
	if j.n == maxSpanRun {
		j.spans()
		keep := maxSpanPieces - 1
		copy(j.run[:keep], j.run[j.n-keep:j.n])
		j.n = keep
	}
	j.run[j.n] = p
	j.n++
}

// end joins the run added so far.
func (j *joiner) end() {
	j.spans()
	j.n = 0
}

// pair joins a name and its value alone, as a run of their own.
func (j *joiner) pair(name, value string) {
	if len(name)+len(value) < minJoinedLen || !fieldPiece(name) || !fieldPiece(value) {
		return
	}
	j.run[0], j.run[1], j.n = name, value, 2
	j.end()
}

func (j *joiner) text() *strings.Builder {
	if b, ok := j.texts[j.where]; ok {
		return b
	}
	if j.texts == nil {
		j.texts = map[string]*strings.Builder{}
	}
	b := &strings.Builder{}
	j.texts[j.where], j.order = b, append(j.order, j.where)
	return b
}

// spans writes, for each rule keyword in the run's pieces joined, the runs
// of two or more consecutive pieces around it, from minJoinedLen to
// maxJoinedSpan bytes and at most maxSpanPieces pieces long, one per line.
// A token cut at the pieces' edges is then one line, whole, and the line's
// ends are the edges a pattern wants around it (a pattern that wants \b
// before "sk_live_" would not find it after another piece). A run without
// a keyword costs one pass of the automaton: the rules' matches all hold
// one of their keywords; the words that a rule wants beside a token
// ("curl", "key") are not looked for in pieces.
func (j *joiner) spans() {
	if j.n < 2 {
		return
	}
	j.buf = j.buf[:0]
	for k, p := range j.run[:j.n] {
		j.buf = append(j.buf, p...)
		j.ends[k] = len(j.buf)
	}
	joined := bytesString(j.buf)
	ends := j.ends[:j.n]
	pieceAt := func(off int) int {
		k, _ := slices.BinarySearch(ends, off+1)
		return k
	}
	var done map[[2]int]bool
	j.kw.each(joined, func(start, id int) {
		if !j.inToken[id] {
			return // a word beside a token, not in it: no piece holds it
		}
		first, last := pieceAt(start), pieceAt(start+j.kw.lens[id]-1)
		for a := first; a >= 0 && a > first-maxSpanPieces; a-- {
			from := 0
			if a > 0 {
				from = ends[a-1]
			}
			if ends[last]-from > maxJoinedSpan {
				break
			}
			for z := max(last, a+1); z < len(ends) && z-a < maxSpanPieces && ends[z]-from <= maxJoinedSpan; z++ {
				if ends[z]-from < minJoinedLen || done[[2]int{a, z}] || j.tail && z < len(ends)-1 {
					continue
				}
				b := j.text()
				if b.Len()+ends[z]-from+1 > maxJoinedText {
					return
				}
				if done == nil {
					done = map[[2]int]bool{}
				}
				done[[2]int{a, z}] = true
				b.WriteString(joined[from:ends[z]])
				b.WriteByte('\n')
			}
		}
	})
	j.encodedSpans(joined, ends, done)
}

// encodedSpans writes, as spans does, the runs of two or more consecutive
// pieces that are one encoded run together (a token base64'd or hex'd and
// then cut: no keyword shows in the pieces) when it decodes to text that
// holds a keyword a token holds. Only runs of pieces that are all base64
// or hex digits, padded at most at their end, are decoded, from the pieces
// whose first bytes can start text (mayEncodeText), on the stack.
func (j *joiner) encodedSpans(joined string, ends []int, done map[[2]int]bool) {
	var encoded, padded [maxSpanRun]bool
	for k, end := range ends {
		from := 0
		if k > 0 {
			from = ends[k-1]
		}
		encoded[k], padded[k] = encodedPiece(joined[from:end]), joined[end-1] == '='
	}
	for a := range len(ends) - 1 {
		from := 0
		if a > 0 {
			from = ends[a-1]
		}
		if !encoded[a] || !mayEncodeText(joined[from:]) {
			continue
		}
		for z := a + 1; z < len(ends) && z-a < maxSpanPieces && ends[z]-from <= maxJoinedSpan; z++ {
			if !encoded[z] || padded[z-1] {
				break // a piece that is no encoding, or padding before the end
			}
			span := joined[from:ends[z]]
			if len(span) < minBase64Run || done[[2]int{a, z}] || j.tail && z < len(ends)-1 {
				continue
			}
			if r, ok := decodeRun(span); !ok || !j.holdsTokenKeyword(r.decoded) {
				continue
			}
			b := j.text()
			if b.Len()+len(span)+1 > maxJoinedText {
				return
			}
			if done == nil {
				done = map[[2]int]bool{}
			}
			done[[2]int{a, z}] = true
			b.WriteString(span)
			b.WriteByte('\n')
		}
	}
}

// encodedPiece reports a piece that may be part of a base64, base64url or
// hex run: its digits, and padding at its end.
func encodedPiece(p string) bool {
	p = strings.TrimRight(p, "=")
	for i := 0; i < len(p); i++ {
		if !b64Chars[p[i]] {
			return false
		}
	}
	return p != ""
}

// holdsTokenKeyword reports whether t holds a keyword that a rule's token
// holds.
func (j *joiner) holdsTokenKeyword(t string) bool {
	found := false
	j.kw.each(t, func(_, id int) { found = found || j.inToken[id] })
	return found
}

// segments are the joined texts, each of the layers in chain.
func (j *joiner) segments(chain []string, body bool) []*segment {
	var out []*segment
	for _, w := range j.order {
		if b := j.texts[w]; b.Len() > 0 {
			out = append(out, &segment{where: w, chain: append(chain[:len(chain):len(chain)], encJoinedFields), text: b.String(), body: body})
		}
	}
	return out
}

// fieldPiece reports a value that may be a piece of a token: at most
// maxFieldPiece letters, digits and the punctuation of token formats and
// their encodings ('_', '-', '.', '+', '/', '=').
func fieldPiece(v string) bool {
	if len(v) > maxFieldPiece {
		return false
	}
	for i := 0; i < len(v); i++ {
		if !isPieceByte(v[i]) {
			return false
		}
	}
	return true
}
