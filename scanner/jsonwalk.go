package scanner

import (
	"encoding/binary"
	"io"
	"math/bits"
	"slices"
	"strconv"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// jsonSegmentsFast is jsonSegments for a body that is one JSON value: a
// single pass over the bytes that checks the syntax as json.Valid does and
// gives the segments of the decoder's walk, without a token per value. It
// reports false for anything else (not JSON, or a stream of values), and
// the caller then walks with the decoder. Its texts, paths and segments
// are cut from ar (nil: from new memory).
func jsonSegmentsFast(b []byte, chain []string, ar *scanArena) ([]*segment, bool) {
	return jsonWalk(&jsonInput{b: b, size: len(b)}, chain, ar)
}

// jsonSegmentsStream is jsonSegmentsFast over what r yields (a body as it
// is decompressed), read through a window that slides on as the walk goes:
// the whole decompressed body is never held, only its segments' texts and
// the window, which grows to hold the longest string. size is the expected
// length of the text (it sizes the first arena). err is r's error, which
// the walk stops at (ok is then false).
func jsonSegmentsStream(r io.Reader, size int, chain []string, ar *scanArena) (segs []*segment, ok bool, err error) {
	return jsonSegmentsWindow(r, jsonWindow, size, chain, ar)
}

// jsonSegmentsWindow is jsonSegmentsStream with a first window of n bytes.
func jsonSegmentsWindow(r io.Reader, n, size int, chain []string, ar *scanArena) (segs []*segment, ok bool, err error) {
	in := &jsonInput{b: make([]byte, 0, n), r: r, size: size}
	segs, ok = jsonWalk(in, chain, ar)
	if in.err != nil {
		return nil, false, in.err
	}
	return segs, ok, nil
}

// jsonWindow is jsonSegmentsStream's first window.
const jsonWindow = 256 << 10

// jsonInput is the bytes jsonWalk reads: all of a body (r nil), a window
// over a stream, or a body as it is read (fill).
type jsonInput struct {
	b    []byte
	r    io.Reader
	size int   // the text's expected length
	err  error // r's error (not io.EOF), which ends the walk
	// fill: b is the body itself, which more reads on into (growing it as
	// readInto does) and never slides.
	fill bool
	// emit, when set, takes the groups cut so far whenever they hold batch
	// bytes of text (pipeline.add); the walk returns the rest.
	emit  func([]*segment)
	batch int
}

// more slides the window past b[:i] and fills it from r, returning where
// b[i] is now and false when r had nothing more. A window that b[i:] fills
// is doubled first: a token is read whole, or read again from its start
// once more is in, and filling the window bounds how often.
func (in *jsonInput) more(i int) (int, bool) {
	if in.r == nil {
		return i, false
	}
	if in.fill {
		return i, in.fillMore(len(in.b) - i)
	}
	keep := len(in.b) - i
	if keep == cap(in.b) {
		grown := make([]byte, keep, 2*cap(in.b))
		copy(grown, in.b[i:])
		in.b = grown
	} else {
		in.b = in.b[:copy(in.b[:cap(in.b)], in.b[i:])]
	}
	for len(in.b) < cap(in.b) && in.read() {
	}
	return 0, len(in.b) > keep && in.err == nil
}

// read reads once into the room b has left; false: r has ended (at its
// end, or with err).
func (in *jsonInput) read() bool {
	n, err := in.r.Read(in.b[len(in.b):cap(in.b)])
	in.b = in.b[:len(in.b)+n]
	if err != nil {
		if err != io.EOF {
			in.err = err
		}
		in.r = nil
		return false
	}
	return true
}

// fillMore reads on into the body: at least one byte, and at least as
// many as the token being read already holds, so that a long token arriving
// in many reads is read again a few times, not once per read.
func (in *jsonInput) fillMore(pending int) bool {
	start := len(in.b)
	want := start + max(pending, 1)
	for len(in.b) < want {
		if len(in.b) == cap(in.b) {
			in.b = append(in.b, 0)[:len(in.b)]
		}
		if !in.read() {
			break
		}
	}
	return len(in.b) > start && in.err == nil
}

// jsonWalk is jsonSegmentsFast over in: a token that runs into the end of
// the window is read again from its start once the window has moved on.
func jsonWalk(in *jsonInput, chain []string, ar *scanArena) ([]*segment, bool) {
	b := in.b
	var more bool // in.more's answer (b is reset after each call, not in a closure: the loop keeps b in registers)
	type frame struct {
		obj  bool
		path string // the path of the container itself
		key  string
		idx  int
	}
	// What may come next.
	const (
		wantValue        = iota // at the top, after a colon, after a comma in an array
		wantValueOrClose        // after [
		wantKeyOrClose          // after {
		wantKey                 // after a comma in an object
		wantColon               // after a key
		wantCommaOrClose        // after a value in a container
		wantEnd                 // after the top value
	)
	var (
		stack   []frame
		out     []*segment
		scratch []byte
		state   = wantValue
		keys    = map[string]string{} // object keys read so far, to reuse their strings
		// The segments' texts and the segments themselves are cut from
		// two arenas, not allocated one by one: a chat body has a
		// thousand strings. A text's bytes are never written again once
		// it is cut (an arena that fills is left to its texts, and a new
		// one begun), so the texts can share the arena's memory.
		texts   []byte
		paths   []byte
		segs    []segment
		cut     int // bytes of the text arenas taken
		emitted int // text bytes in out not yet handed to in.emit
	)
	text := func(t []byte) string {
		if cap(texts)-len(texts) < len(t) {
			// The first arena holds b's strings and the keys that prefix
			// them, which rarely come to more than b and an eighth; a
			// later one an eighth of b more, or a quarter of what the
			// arenas hold so far when the size was guessed short (a
			// compressed body's).
			n := max(in.size/8, cut/4) + 64
			if texts == nil {
				n += in.size
			}
			texts = ar.bytes(max(len(t), n))
			cut += cap(texts)
		}
		n := len(texts)
		texts = append(texts, t...)
		return unsafe.String(unsafe.SliceData(texts[n:]), len(t))
	}
	newSegment := func() *segment {
		if len(segs) == cap(segs) {
			segs = ar.segments(min(2*cap(segs)+8, 512))
		}
		segs = segs[:len(segs)+1]
		return &segs[len(segs)-1]
	}
	// elemPath is the path of the value about to be read in the top frame.
	elemPath := func() string {
		if len(stack) == 0 {
			return "json:$"
		}
		f := &stack[len(stack)-1]
		// Paths are cut from an arena too, as texts are.
		if cap(paths)-len(paths) < len(f.path)+len(f.key)+32 {
			paths = ar.bytes(max(4096, 2*(len(f.path)+len(f.key)+32)))
		}
		n := len(paths)
		paths = append(paths, f.path...)
		switch {
		case !f.obj:
			paths = strconv.AppendInt(append(paths, '['), int64(f.idx), 10)
			paths = append(paths, ']')
		case plainKey(f.key):
			paths = append(append(paths, '.'), f.key...)
		default:
			paths = appendQuoted(append(paths, '['), f.key)
			paths = append(paths, ']')
		}
		return unsafe.String(unsafe.SliceData(paths[n:]), len(paths)-n)
	}
	// A run of character codes in an array ([103,104,112,95,…]: the bytes
	// of a text, as JSON.stringify(Array.from(buffer)) writes them) is read
	// as the text it spells, a segment of its own: numbers are no strings,
	// and nothing else reads them.
	var (
		codes     []byte
		codesFrom int    // the index of the run's first element
		codesPath string // the array's path
	)
	flushCodes := func() {
		if len(codes) >= minSpelled && slices.ContainsFunc(codes, isASCIILetter) {
			g := newSegment()
			where := codesPath + "[" + strconv.Itoa(codesFrom) + ":" + strconv.Itoa(codesFrom+len(codes)) + "]"
			*g = segment{where: where, chain: chain, text: text(codes), body: true}
			out = append(out, g)
		}
		codes = codes[:0]
	}
	// valueDone advances the enclosing container past a value.
	valueDone := func() {
		n := len(stack)
		if n == 0 {
			state = wantEnd
			return
		}
		if !stack[n-1].obj {
			stack[n-1].idx++
		}
		state = wantCommaOrClose
	}
	for i := 0; ; {
		if i == len(b) {
			i, more = in.more(i)
			if b = in.b; !more {
				break
			}
		}
		c := b[i]
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			i++
			continue
		}
		isValue := state == wantValue || state == wantValueOrClose
		switch {
		case c == ',' && state == wantCommaOrClose:
			state = wantValue
			if stack[len(stack)-1].obj {
				state = wantKey
			}
			i++
		case c == ':' && state == wantColon:
			state = wantValue
			i++
		case (c == '}' && (state == wantKeyOrClose || state == wantCommaOrClose && stack[len(stack)-1].obj)) ||
			(c == ']' && (state == wantValueOrClose || state == wantCommaOrClose && !stack[len(stack)-1].obj)):
			if len(codes) > 0 {
				flushCodes()
			}
			stack = stack[:len(stack)-1]
			valueDone()
			i++
		case (c == '{' || c == '[') && isValue:
			if len(codes) > 0 {
				flushCodes()
			}
			stack = append(stack, frame{obj: c == '{', path: elemPath()})
			state = wantValueOrClose
			if c == '{' {
				state = wantKeyOrClose
			}
			i++
		case c == '"' && (isValue || state == wantKey || state == wantKeyOrClose):
			isKey := state == wantKey || state == wantKeyOrClose
			var end int
			for {
				scratch = scratch[:0]
				if n := len(stack); !isKey && n > 0 && stack[n-1].obj {
					scratch = append(append(scratch, stack[n-1].key...), ": "...)
				}
				if end, scratch = appendString(scratch, b, i); end >= 0 {
					break
				}
				i, more = in.more(i)
				if b = in.b; !more {
					return nil, false
				}
			}
			i = end + 1
			if isKey {
				f := &stack[len(stack)-1]
				if k, ok := keys[string(scratch)]; ok {
					f.key = k // the same few keys over and over in most bodies
				} else {
					f.key = string(scratch)
					if len(keys) < maxInternedKeys {
						keys[f.key] = f.key
					}
				}
				state = wantColon
				continue
			}
			if len(codes) > 0 {
				flushCodes()
			}
			g := newSegment()
			*g = segment{where: elemPath(), chain: chain, text: text(scratch), body: true}
			out = append(out, g)
			if in.emit != nil {
				if emitted += len(g.text); emitted >= in.batch {
					in.emit(out)
					out, emitted = nil, 0
				}
			}
			valueDone()
		case isValue:
			n := scalarEnd(b, i)
			for (n < 0 || n == len(b)) && in.r != nil {
				i, _ = in.more(i)
				b = in.b
				n = scalarEnd(b, i)
			}
			if n < 0 {
				return nil, false
			}
			if f := len(stack) - 1; f >= 0 && !stack[f].obj {
				if c, ok := charCodeAt(b[i:n]); ok {
					if len(codes) == 0 {
						codesFrom, codesPath = stack[f].idx, stack[f].path
					}
					codes = append(codes, c)
				} else if len(codes) > 0 {
					flushCodes()
				}
			}
			i = n
			valueDone()
		default:
			return nil, false
		}
	}
	if state != wantEnd {
		return nil, false
	}
	return out, true
}

// charCodeAt reads a JSON number as a character code: an integer from 32
// to 126, or a tab, line feed or carriage return (a file's bytes).
func charCodeAt(num []byte) (byte, bool) {
	if len(num) == 0 || len(num) > 3 {
		return 0, false
	}
	v := 0
	for _, d := range num {
		if d < '0' || d > '9' {
			return 0, false
		}
		v = v*10 + int(d-'0')
	}
	if v >= 32 && v <= 126 || v == '\t' || v == '\n' || v == '\r' {
		return byte(v), true
	}
	return 0, false
}

// appendQuoted is strconv.AppendQuote, without its rune by rune look at
// a key of printable ASCII (package names, versions, paths), which it
// leaves as it is but for the quotes.
func appendQuoted(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' || c > '~' || c == '"' || c == '\\' {
			return strconv.AppendQuote(dst, s)
		}
	}
	return append(append(append(dst, '"'), s...), '"')
}

// scalarEnd returns the end of the number or literal at b[i], -1 when there
// is none or it runs into something other than a delimiter.
func scalarEnd(b []byte, i int) int {
	for _, lit := range []string{"true", "false", "null"} {
		if len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit {
			return delimited(b, i+len(lit))
		}
	}
	j := i
	digits := func() bool {
		k := j
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		return j > k
	}
	if j < len(b) && b[j] == '-' {
		j++
	}
	switch {
	case j < len(b) && b[j] == '0':
		j++
	case !digits():
		return -1
	}
	if j < len(b) && b[j] == '.' {
		j++
		if !digits() {
			return -1
		}
	}
	if j < len(b) && (b[j] == 'e' || b[j] == 'E') {
		j++
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		if !digits() {
			return -1
		}
	}
	return delimited(b, j)
}

// delimited returns j when b ends there or a delimiter follows, else -1.
func delimited(b []byte, j int) int {
	if j < len(b) && !jsonDelim[b[j]] {
		return -1
	}
	return j
}

// jsonDelim are the bytes that end a number or a literal.
var jsonDelim = func() (t [256]bool) {
	for _, c := range " \t\n\r,:{}[]\"" {
		t[c] = true
	}
	return t
}()

// strSpecial are the bytes appendString stops at: the quote, the backslash,
// control bytes and the bytes of non-ASCII text.
var strSpecial = func() (t [256]bool) {
	for c := range 256 {
		t[c] = c == '"' || c == '\\' || c < ' ' || c >= utf8.RuneSelf
	}
	return t
}()

// strSpecialIn reports whether one of the eight bytes packed in x may be
// a strSpecial byte (a quote, a backslash, a control byte or one from
// 0x80): the bit tricks find every such byte, and may also flag a byte
// after one.
func strSpecialIn(x uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	zero := func(v uint64) uint64 { return (v - ones) &^ v }
	return (x|zero(x^('"'*ones))|zero(x^('\\'*ones))|(x-' '*ones)&^x)&highs != 0
}

// appendString appends the text of the JSON string opened at b[i] to dst,
// decoded as encoding/json decodes it (invalid UTF-8 and lone surrogates
// become U+FFFD), and returns the index of the quote that closes it; -1
// when it is not closed or not valid (a control byte, an unknown escape).
// One pass: the plain bytes between escapes are copied as one run.
func appendString(dst, b []byte, i int) (int, []byte) {
	from := i + 1 // the first byte not yet copied
	// m holds the strSpecial bytes of the 32 from base that are not yet
	// handled: one look at 32 bytes serves all the escapes in them (source
	// code has one every few bytes: line ends, tabs, quotes).
	var m uint32
	base := 0
	for j := i + 1; ; {
		if m == 0 && strMaskAsm && j+32 <= len(b) {
			off, mask := strSpecialBlock(b[j:])
			j += off
			m, base = mask, j
		}
		if m != 0 {
			j = base + bits.TrailingZeros32(m)
		} else { // the last bytes, or no assembly: eight at a time, then one
			for j+8 <= len(b) && !strSpecialIn(binary.LittleEndian.Uint64(b[j:])) {
				j += 8
			}
			for j < len(b) && !strSpecial[b[j]] {
				j++
			}
			if j == len(b) {
				break
			}
		}
		switch c := b[j]; {
		case c == '"':
			return j, append(dst, b[from:j]...)
		case c == '\\':
			dst = append(dst, b[from:j]...)
			if j+1 >= len(b) {
				return -1, dst
			}
			switch e := b[j+1]; e {
			case '"', '\\', '/':
				dst, j = append(dst, e), j+2
			case 'b':
				dst, j = append(dst, '\b'), j+2
			case 'f':
				dst, j = append(dst, '\f'), j+2
			case 'n':
				dst, j = append(dst, '\n'), j+2
			case 'r':
				dst, j = append(dst, '\r'), j+2
			case 't':
				dst, j = append(dst, '\t'), j+2
			case 'u':
				r := getu4(b[j:])
				if r < 0 {
					return -1, dst
				}
				j += 6
				if utf16.IsSurrogate(r) {
					if pair := utf16.DecodeRune(r, getu4(b[j:])); pair != unicode.ReplacementChar {
						r, j = pair, j+6
					} else {
						r = unicode.ReplacementChar
					}
				}
				dst = utf8.AppendRune(dst, r)
			default:
				return -1, dst
			}
			from = j
		case c < ' ':
			return -1, dst
		default: // from 0x80: valid UTF-8 stays as it is
			if r, size := utf8.DecodeRune(b[j:]); r != utf8.RuneError || size != 1 {
				j += size
			} else {
				dst = utf8.AppendRune(append(dst, b[from:j]...), unicode.ReplacementChar)
				j++
				from = j
			}
		}
		// The bytes before j are handled (an escape takes two bytes and
		// more, a rune up to four).
		if d := j - base; d >= 32 {
			m = 0
		} else {
			m &^= 1<<d - 1
		}
	}
	return -1, dst
}

// getu4 decodes \uXXXX at the start of s, -1 when there is none.
func getu4(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range s[2:6] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

// maxInternedKeys bounds the keys jsonSegmentsFast reuses.
const maxInternedKeys = 256
