package scanner

import (
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"
)

// Shortest encoded runs worth decoding: shorter ones cannot hide a credential.
const (
	minBase64Run = 16
	minHexRun    = 32
)

// encoding names, as they appear in a decoding chain.
const (
	encBase64    = "base64"
	encBase64URL = "base64url"
	encBase32    = "base32"
	encHex       = "hex"
	encPercent   = "percent"
	encReversed  = "reversed"
)

// run is an encoded stretch of text.
type run struct {
	start, end int
	enc        string
	decoded    string
	packed     string // decoded holds data compressed in this format (packed.go), not text
}

// tokenPrefixes are providers' token prefixes: a token written backwards
// ("…_phg") ends with one reversed, one with its letters turned some
// places (ROT13's "tuc_…", a Caesar shift's "jks_…") starts with one so
// turned, and its receiver turns it back with a line of code.
var tokenPrefixes = func() []string {
	out := []string{"AKIA", "ASIA", "github_pat_", "AIza", "hf_", "npm_", "pypi-", "shpat_", "dop_v1_", "sk_live_", "rk_live_", "sk_test_",
		"sk-ant-", "sk-proj-", "sk-svcacct-", "sk-admin-"} // "sk-" alone is too short to be known turned
	for _, k := range keyShapes {
		out = append(out, k.marks...)
	}
	return out
}()

// suffixSet is a set of suffixes with the bytes they end with: most runs
// have none there, and are passed at one look.
type suffixSet struct {
	words []string
	edge  [256]bool
}

func newSuffixSet(words []string) *suffixSet {
	p := &suffixSet{words: words}
	for _, w := range words {
		p.edge[w[len(w)-1]] = true
	}
	return p
}

func (p *suffixSet) endsOne(r string) bool {
	if !p.edge[r[len(r)-1]] {
		return false
	}
	for _, w := range p.words {
		if strings.HasSuffix(r, w) {
			return true
		}
	}
	return false
}

var (
	reversedPrefixes = newSuffixSet(mapWords(tokenPrefixes, reversed))
	turnedPrefixes   = newShiftIndex(tokenPrefixes)
)

// shiftIndex finds which of a set of prefixes a text starts with turned
// some places (a Caesar shift, ROT13 among them), with one look-up: the
// prefixes are filed by what a shift keeps of their first two bytes (the
// case of each letter, the distance between them, a byte that is no
// letter), so only those that can be there are compared.
type shiftIndex [2 * shiftKeys][]string

// shiftKeys are the keys of one case of a first letter: a second letter
// (two cases, 26 distances) or another byte.
const shiftKeys = 2*26 + 256

func newShiftIndex(words []string) *shiftIndex {
	x := &shiftIndex{}
	for _, w := range words {
		if k, ok := shiftKey(w); ok {
			x[k] = append(x[k], w)
		}
	}
	return x
}

// shiftKey is what a Caesar shift keeps of s's first two bytes; ok is false
// when s does not start with a letter.
func shiftKey(s string) (int, bool) {
	if len(s) < 2 || !isASCIILetter(s[0]) {
		return 0, false
	}
	k := int(s[0]&0x20>>5) * shiftKeys // the first letter's case
	if c := s[1]; isASCIILetter(c) {
		return k + int(c&0x20>>5)*26 + letterDistance(s[0], c), true
	}
	return k + 2*26 + int(s[1]), true
}

// letterDistance is how many places on from letter a letter b is (0 to 25),
// whatever their cases.
func letterDistance(a, b byte) int { return (int(b|0x20) - int(a|0x20) + 26) % 26 }

// turned reports by how many places (1 to 25) r's letters are turned from
// a prefix in x, 0 for none (a prefix as it is is no turn: the rules find
// it). Turned other than by ROT13, a prefix of two letters ("sk-", "hf_")
// is any such word whose letters are as far apart (wazero's "as-f32x4…"
// is "sk-x32p4…" turned 8 places), and is not counted.
func (x *shiftIndex) turned(r string) int {
	k, ok := shiftKey(r)
	if !ok {
		return 0
	}
	for _, w := range x[k] {
		n := letterDistance(w[0], r[0])
		if n != 0 && (n == 13 || countLetters(w) >= 3) && turnedPrefix(r, w, n) {
			return n
		}
	}
	return 0
}

// turnedPrefix reports whether r starts with w turned n places.
func turnedPrefix(r, w string, n int) bool {
	if len(r) < len(w) {
		return false
	}
	for i := 0; i < len(w); i++ {
		if r[i] != turnLetter(w[i], n) {
			return false
		}
	}
	return true
}

func countLetters(w string) int {
	n := 0
	for i := 0; i < len(w); i++ {
		if isASCIILetter(w[i]) {
			n++
		}
	}
	return n
}

func mapWords(words []string, f func(string) string) []string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = f(w)
	}
	return out
}

// rot is s with its ASCII letters turned n places (0 to 25) on.
func rot(s string, n int) string {
	b := []byte(s)
	for i, c := range b {
		b[i] = turnLetter(c, n)
	}
	return string(b)
}

// turnLetter is c turned n places on when it is an ASCII letter.
func turnLetter(c byte, n int) byte {
	switch {
	case c >= 'a' && c <= 'z':
		return 'a' + byte((int(c-'a')+n)%26)
	case c >= 'A' && c <= 'Z':
		return 'A' + byte((int(c-'A')+n)%26)
	}
	return c
}

// rotName is the decoding chain's name of letters turned n places on, as
// the sender turned them: ROT13, or a Caesar shift.
func rotName(n int) string { return "rot" + strconv.Itoa(n) }

// rotOf is n of a rotName, 0 for another name.
func rotOf(enc string) int {
	digits, ok := strings.CutPrefix(enc, "rot")
	n, err := strconv.Atoi(digits)
	if !ok || err != nil || n < 1 || n > 25 {
		return 0
	}
	return n
}

// reversed is s backwards, byte by byte (tokens are ASCII).
func reversed(s string) string {
	b := make([]byte, len(s))
	for i := range len(s) {
		b[len(s)-1-i] = s[i]
	}
	return string(b)
}

// encodedRuns finds base64, base64url, base32 and hex runs in s that decode
// to text, forwards or written backwards, and runs that are a token written
// backwards or with its letters turned.
func encodedRuns(s string) []run {
	var out []run
	for i := 0; i < len(s); {
		// Here s[i-1] is not base64: when s[i+15] is not either, or the
		// last byte before it that is not, no run starting up to there is
		// long enough.
		if e := i + minBase64Run - 1; e < len(s) {
			k := e
			for k > i && isB64(s[k]) {
				k--
			}
			if k > i || !isB64(s[i]) {
				i = k + 1
				continue
			}
		}
		if !isB64(s[i]) {
			i++
			continue
		}
		j := i
		for j < len(s) && isB64(s[j]) {
			j++
		}
		k := j
		for k < len(s) && k-j < 2 && s[k] == '=' {
			k++
		}
		if j-i >= minBase64Run {
			var end int
			if out, end = readRun(s, i, j, k, out); end > k {
				i = end // a wrapped run, read to its last line
				continue
			}
		}
		i = k
		if i == j {
			i++
		}
	}
	return out
}

// wrappedRun joins a base64 or hex run that ends its line, s[i:j], with
// the lines after it that go on with it. Encoders wrap at a fixed width
// (76 for base64(1) and MIME, 64 for PEM and openssl, 60 for xxd -p): each
// line but the last is as long as the first, and a token cut at a line's
// end is whole only in the joined run. It reports the end of the last
// line's run (its padding included) and the joined text; ok is false when
// no line goes on with s[i:j]. A line may be indented (a YAML block).
func wrappedRun(s string, i, j int) (end int, joined string, ok bool) {
	w := j - i
	if w%4 != 0 {
		return 0, "", false
	}
	var b []byte
	for {
		// s[:j] ends a full line's run: a line break must follow.
		p := j
		if p < len(s) && s[p] == '\r' {
			p++
		}
		if p >= len(s) || s[p] != '\n' {
			break
		}
		p++
		for indent := p + 16; p < len(s) && p < indent && (s[p] == ' ' || s[p] == '\t'); p++ {
		}
		q := p
		for q < len(s) && q-p <= w && isB64(s[q]) {
			q++
		}
		if q == p || q-p > w {
			break
		}
		pad := q
		for pad < len(s) && pad-q < 2 && s[pad] == '=' {
			pad++
		}
		if b == nil {
			b = append(make([]byte, 0, 4*w), s[i:j]...)
		}
		b = append(b, s[p:pad]...)
		end = pad
		if q-p < w || pad > q {
			break // a short or padded line is the last
		}
		j = q
	}
	if b == nil {
		return 0, "", false
	}
	return end, ownString(b), true
}

// relayout puts enc, an encoding as long as what orig encodes, in orig's
// layout: its line breaks and indentation where orig had them (a wrapped
// run, redacted, keeps its lines).
func relayout(orig, enc string) string {
	if !strings.ContainsAny(orig, "\r\n") {
		return enc
	}
	b := make([]byte, 0, len(orig))
	k := 0
	for i := 0; i < len(orig); i++ {
		switch c := orig[i]; c {
		case '\r', '\n', ' ', '\t':
			b = append(b, c)
		default:
			if k == len(enc) {
				return enc
			}
			b = append(b, enc[k])
			k++
		}
	}
	if k != len(enc) {
		return enc
	}
	return string(b)
}

// withoutLayout is s without its line breaks and indentation.
func withoutLayout(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\r' || r == '\n' || r == ' ' || r == '\t' {
			return -1
		}
		return r
	}, s)
}

// readRun appends what the base64 bytes s[i:j] (then padding up to k)
// read as: a run wrapped over the lines after it (its end, past k, is then
// returned, and nothing else is read), or the run decoded, forwards or
// backwards (`base64 | rev`: the padding, if any, is before i), and the run
// as a token backwards or with its letters turned. encodedRuns and its
// byte-by-byte reference share it.
func readRun(s string, i, j, k int, out []run) ([]run, int) {
	if k == j {
		if end, joined, ok := wrappedRun(s, i, j); ok {
			if r, ok := decodeRun(joined); ok {
				r.start, r.end = i, end
				return append(out, r), end
			}
		}
	}
	if r, ok := decodeRun(s[i:k]); ok {
		r.start, r.end = i, k
		out = append(out, r)
	} else if r, ok := decodeReversed(s[i:j]); ok {
		r.start, r.end, r.enc = i, j, encReversed+" > "+r.enc
		out = append(out, r)
	}
	if reversedPrefixes.endsOne(s[i:j]) {
		out = append(out, run{start: i, end: j, enc: encReversed, decoded: reversed(s[i:j])})
	}
	if n := turnedPrefixes.turned(s[i:j]); n != 0 {
		out = append(out, run{start: i, end: j, enc: rotName(n), decoded: rot(s[i:j], 26-n)})
	}
	return out, k
}

// decodeReversed is decodeRun of t written backwards, turned on the stack:
// most runs read no better backwards, and nothing of them is kept.
func decodeReversed(t string) (run, bool) {
	var head [16]byte
	k := min(len(t), len(head))
	for i := range k {
		head[i] = t[len(t)-1-i]
	}
	if !mayEncodeText(string(head[:k])) {
		return run{}, false
	}
	var stack [512]byte
	var b []byte
	if len(t) > len(stack) {
		b = make([]byte, len(t))
	} else {
		b = stack[:len(t)]
	}
	for i := range len(t) {
		b[len(t)-1-i] = t[i]
	}
	return decodeRun(unsafe.String(unsafe.SliceData(b), len(b)))
}

func isB64(c byte) bool { return b64Chars[c] }

// b64Chars are the bytes of base64 and base64url text (padding aside).
var b64Chars = func() (t [256]bool) {
	for c := range 256 {
		t[c] = c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '-' || c == '_'
	}
	return t
}()

func isHexStr(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

func decodeRun(t string) (run, bool) {
	if len(t) >= minHexRun && len(t)%2 == 0 && isHexStr(t) {
		b, err := hex.DecodeString(t)
		switch {
		case err != nil:
		case textual(b):
			return run{enc: encHex, decoded: ownString(b)}, true
		case packedFormat(b) != "":
			return run{enc: encHex, decoded: ownString(b), packed: packedFormat(b)}, true
		}
		return run{}, false
	}
	if d, ok := decodeBase32(t); ok {
		return run{enc: encBase32, decoded: d}, true
	}
	enc := encBase64
	e := base64.RawStdEncoding
	std, url := false, false // '+' or '/'; '-' or '_'
	for i := 0; i < len(t); i++ {
		switch t[i] {
		case '+', '/':
			std = true
		case '-', '_':
			url = true
		}
	}
	switch {
	case std && url:
		return run{}, false
	case url:
		enc, e = encBase64URL, base64.RawURLEncoding
	}
	// Most runs in source code and prose are words that decode to bytes
	// that are no text: they are decoded on the stack, and only text is
	// kept.
	t = strings.TrimRight(t, "=")
	var stack [512]byte
	var buf []byte
	if n := e.DecodedLen(len(t)); n > len(stack) {
		buf = make([]byte, n)
	} else {
		buf = stack[:n]
	}
	n, err := e.Decode(buf, unsafe.Slice(unsafe.StringData(t), len(t)))
	if err != nil || n < 8 {
		return run{}, false
	}
	if !textual(buf[:n]) {
		if f := packedFormat(buf[:n]); f != "" {
			return run{enc: enc, decoded: string(buf[:n]), packed: f}, true
		}
		return run{}, false
	}
	return run{enc: enc, decoded: string(buf[:n])}, true
}

// mayEncodeText reports whether an encoded run that starts with t (its
// first 16 bytes are read) may decode to text that starts with ASCII, read
// as hex, base32 or base64, by what such text leaves at the start of each
// byte or group: hex digits 0 to 7 before each byte's second, base32
// digits (of one case) A to P (values below 16), base64 digits A to f
// (below 32). Most runs that are no encoding (hashes, identifiers) fail it
// in a few bytes, and are not decoded.
func mayEncodeText(t string) bool {
	t = t[:min(len(t), 16)]
	b64 := true
	for i := 0; i < len(t) && b64; i += 4 {
		c := t[i]
		b64 = c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'f'
	}
	if b64 {
		return true
	}
	b32 := base32Digits(strings.TrimRight(t, "="))
	for i := 0; i < len(t) && b32; i += 8 {
		c := t[i] | 0x20
		b32 = c >= 'a' && c <= 'p'
	}
	if b32 {
		return true
	}
	for i := 0; i < len(t); i++ {
		if c := t[i]; !isHexByte[c] || i%2 == 0 && (c < '0' || c > '7') {
			return false
		}
	}
	return true
}

// decodeBase32 decodes t when it is base32 (RFC 4648) in one case, padded
// or not, and reads as text: base32's digits are base64's too, and a
// sender told to hide a token picks either. A run of capitals or of
// lower-case letters and the digits 2 to 7 is rare in anything else, and
// when it is no base32 it goes on to be read as base64.
func decodeBase32(t string) (string, bool) {
	t = strings.TrimRight(t, "=")
	if !base32Digits(t) {
		return "", false
	}
	b, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(strings.ToUpper(t))
	if err != nil || len(b) < 8 || !textual(b) {
		return "", false
	}
	return string(b), true
}

// base32Digits reports whether t is all base32 digits, in one case.
func base32Digits(t string) bool {
	upper, lower := true, true
	for i := 0; i < len(t); i++ {
		switch c := t[i]; {
		case c >= '2' && c <= '7':
		case c >= 'A' && c <= 'Z' && upper:
			lower = false
		case c >= 'a' && c <= 'z' && lower:
			upper = false
		default: // no base32 digit, or the other case
			return false
		}
	}
	return true
}

// textual reports whether b reads as text: valid UTF-8 with few control bytes.
func textual(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	bad := 0
	for _, c := range b {
		if c < 0x20 && c != '\t' && c != '\n' && c != '\r' || c == 0x7f {
			bad++
		}
	}
	return bad*20 <= len(b)
}

// hasPercent reports whether s holds a %XX escape.
func hasPercent(s string) bool {
	for i := strings.IndexByte(s, '%'); i >= 0 && i+2 < len(s); {
		if isHexStr(s[i+1 : i+3]) {
			return true
		}
		n := strings.IndexByte(s[i+1:], '%')
		if n < 0 {
			return false
		}
		i += 1 + n
	}
	return false
}

// percentDecode undoes %XX escapes, leaving malformed ones as they are.
func percentDecode(s string) string {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			hi, ok1 := hexVal(s[i+1])
			lo, ok2 := hexVal(s[i+2])
			if ok1 && ok2 {
				b = append(b, hi<<4|lo)
				i += 2
				continue
			}
		}
		b = append(b, s[i])
	}
	return ownString(b)
}

// ownString makes a string of b without a copy; b must not be used after.
// Decoded layers are as large as the text they come from: copying each
// would double the memory a layered body needs.
func ownString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// bytesString is b as a string without a copy, for bytes that are read
// but never written to again.
func bytesString(b []byte) string { return ownString(b) }

// percentEncode escapes everything but unreserved characters (RFC 3986).
func percentEncode(s string) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' || c == '*' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&15])
	}
	return b.String()
}

// peel adds, for every segment, the text its encoded layers decode to, down
// to the scanner's depth. Compressed data in an encoded run is inflated
// within what sh has left of the scan's budget (sh nil: the scanner's body
// limit); past it, the run is reported as a decompression-limit finding.
func (s *Scanner) peel(segs []*segment, sh *inspectShared) ([]*segment, []Finding) {
	depth := s.depth()
	out := segs
	var over []Finding
	for i := 0; i < len(out); i++ {
		g := out[i]
		if g.depth >= depth {
			continue
		}
		child := func(enc, text string) *segment {
			return &segment{where: g.where, chain: append(append([]string(nil), g.chain...), enc), text: text,
				header: g.header, body: g.body, depth: g.depth + 1}
		}
		// A body or a part that is compressed, or a zip archive, as a
		// file is uploaded (no Content-Encoding says so).
		if f := archiveOf(g.text); f != "" && len(over) == 0 {
			if c, over1 := s.unpacked(g, child, f, f, g.text, sh); c != nil {
				out = append(out, c)
			} else if over1 != nil {
				over = append(over, *over1)
			}
		}
		// featureScan has read the text anyway (for detect): without a
		// long enough run of base64 bytes there is nothing to decode.
		if g.features().f&fB64Run != 0 {
			for _, r := range encodedRuns(g.text) {
				if r.packed != "" {
					if len(over) > 0 {
						continue // refused already: one finding says why
					}
					if c, f := s.unpacked(g, child, r.enc+" > "+r.packed, r.packed, r.decoded, sh); c != nil {
						out = append(out, c)
					} else if f != nil {
						over = append(over, *f)
					}
					continue
				}
				c := child(r.enc, r.decoded)
				c.basic = r.enc == encBase64 && isBasicValue(g, r)
				out = append(out, c)
			}
		}
		if mayHoldHexSep(g) {
			for _, r := range hexSepRuns(g.text) {
				out = append(out, child(r.enc, r.decoded))
			}
		}
		// The feature pass saw every byte: without a '%' (a '\\', or an
		// '=' for quoted-printable) the decoder's own search is skipped.
		if g.features().f&fAnyPercent != 0 && hasPercent(g.text) {
			levels := 0
			d, ok := decodeLines(g.text, '%', hasPercent, func(l string) string {
				d, n := percentLevels(l)
				levels = max(levels, n)
				return d
			})
			if ok {
				out = append(out, child(strings.TrimSuffix(strings.Repeat(encPercent+" > ", levels), " > "), d))
			}
		}
		if g.features().f&fAnyBackslash != 0 && hasEscapes(g.text) {
			if d, ok := decodeLines(g.text, '\\', hasEscapes, unescape); ok {
				out = append(out, child(encEscapes, d))
			}
		}
		// Only a text with a byte from 0x80 can hide a token in Unicode.
		if g.features().f&fAnyHigh != 0 {
			if d, ok := foldUnicodeLines(g.text, g.features().f&fMixedScript != 0); ok {
				out = append(out, child(encUnicode, d))
			}
		}
		if g.features().f&fSpelled != 0 {
			if d, ok := spelledRuns(around(g.text, g.features().spelled)); ok {
				out = append(out, child(encSpelled, d))
			}
		}
		if g.features().f&fNumberList != 0 {
			if d, ok := charCodeRuns(around(g.text, g.features().numbers)); ok {
				out = append(out, child(encCodes, d))
			}
			if d, ok := octalCodeRuns(around(g.text, g.features().numbers)); ok {
				out = append(out, child(encOctal, d))
			}
		}
		if g.features().f&fDigits != 0 {
			if d, ok := binaryRuns(around(g.text, g.features().digits)); ok {
				out = append(out, child(encBinary, d))
			}
		}
		if dumpAhead(g.text) || g.features().f&(fDelimHex|fSpelled) != 0 && strings.Contains(g.text, "000") {
			if d, ok := hexdumpLayer(g.text); ok {
				out = append(out, child(encHexdump, d))
			}
		}
		if hasCharRef(g.text) {
			if d, ok := decodeLines(g.text, '&', hasCharRef, unescapeHTML); ok {
				out = append(out, child(encEntities, d))
			}
		}
		if g.depth == 0 && len(g.text) <= maxOddText && (g.where == "url" || g.header != "") {
			if a, b, r, ok := oddWords(g.text); ok {
				for _, l := range [...]struct{ enc, text string }{{encA85, a}, {encBase85, b}, {encROT47, r}} {
					if l.text != "" {
						out = append(out, child(l.enc, l.text))
					}
				}
			}
		}
		if g.features().f&fAssign != 0 && hasQP(g.text) {
			if d, ok := qpLines(g.text); ok {
				out = append(out, child(encQP, d))
			}
		}
	}
	return out, over
}

// maxUnpacks bounds the compressed texts one scan inflates: a decompressor
// costs some 13 µs to set up however little it inflates, and a 10 MiB body
// of tiny gzip runs in base64 took 3 s of CPU where the same body of plain
// base64 took 0.2 s. More than this many is a decompression-limit finding.
const maxUnpacks = 4096

// unpacked is the layer of g's compressed data (format, encoded as enc in
// g's chain), or the decompression-limit finding when it inflates past the
// scan's budget; neither when it does not inflate.
func (s *Scanner) unpacked(g *segment, child func(enc, text string) *segment, enc, format, data string, sh *inspectShared) (*segment, *Finding) {
	text, err := s.unpack(format, data, sh)
	switch {
	case errors.Is(err, errInflateLimit):
		return nil, &Finding{Kind: KindOversize, Rule: RuleDecompressed, Where: g.where, Decoding: child(enc, "").decoding(),
			Snippet: fmt.Sprintf("%s data decompresses to more than the %d bytes a scan may inflate", format, s.maxBody())}
	case err != nil:
		return nil, nil
	}
	return child(enc, text), nil
}

// unpack inflates data, compressed in format (or a zip archive, a packfile), within
// what is left of the scan's budget, and takes what it inflated from it.
// The budget is read and taken apart, so that groups inspected at once may
// together go past it by what one of them inflates, at most the limit
// again.
func (s *Scanner) unpack(format, data string, sh *inspectShared) (string, error) {
	left := s.maxBody()
	if sh != nil {
		left -= sh.inflated.Load()
		if sh.unpacked.Add(1) > maxUnpacks {
			return "", errInflateLimit
		}
	}
	if left <= 0 {
		return "", errInflateLimit
	}
	in := unsafe.Slice(unsafe.StringData(data), len(data))
	var m *meter
	if sh != nil {
		m = sh.meter
	}
	var b []byte
	var err error
	switch format {
	case "zip":
		b, err = unzip(in, left, m)
	case encGitPack:
		b, err = packObjects(in[packStart(data):], objectIDLen(data), left, m)
	default:
		b, err = inflate(format, in, left, m)
	}
	if m.exhausted() {
		return "", ErrScanMemory // the scan fails (inspectGroups): what was cut short is not passed
	}
	if err != nil {
		return "", err
	}
	if sh != nil {
		sh.inflated.Add(int64(len(b)))
	}
	return ownString(b), nil
}

// linesHolding yields the lines of text that hold the byte a or b, in
// order. In source code most lines hold neither of the bytes a decoder or
// detector needs, and they are passed over with a byte search for each
// rather than cut out one by one.
func linesHolding(text string, a, b byte) iter.Seq[string] {
	return func(yield func(string) bool) {
		na, nb := -2, -2 // the next a and b from start; -1: none left
		next := func(c byte, from int) int {
			if i := strings.IndexByte(text[from:], c); i >= 0 {
				return from + i
			}
			return -1
		}
		for start := 0; start < len(text); {
			if na != -1 && na < start {
				na = next(a, start)
			}
			if nb != -1 && nb < start && b != a {
				nb = next(b, start)
			}
			i := na
			if i < 0 || nb >= 0 && nb < i {
				i = nb
			}
			if i < 0 {
				return
			}
			start += strings.LastIndexByte(text[start:i], '\n') + 1
			end := len(text)
			if j := strings.IndexByte(text[i:], '\n'); j >= 0 {
				end = i + j
			}
			if !yield(text[start:end]) {
				return
			}
			start = end + 1
		}
	}
}

// mayHoldHexSep reports whether hexSepRuns may find a run in g that a rule
// or detector can read: one whose decoding holds an ASCII byte with two
// more bytes after it (every rule and detector reads at least three ASCII
// bytes in a row). An ASCII byte's pair starts with a digit, so such a run
// holds a digit, a hex digit, a delimiter and two more pairs, which the
// feature pass marks as fDelimHex, unless its pairs carry a prefix: 0x
// (fEth) or \x. The feature pass has read g anyway; in prose, which has
// none of them, this saves hexSepRuns' own pass (9 % of a scan of text
// without a keyword).
func mayHoldHexSep(g *segment) bool {
	return g.features().f&(fDelimHex|fEth) != 0 || g.features().f&fAnyBackslash != 0 && strings.Contains(g.text, `\x`)
}

// maskOf is what replaces a secret: as long as the secret, so that lengths
// of fixed-width fields and encodings stay valid.
func maskOf(secret string) string { return strings.Repeat("*", len(secret)) }

// redactText replaces every secret in s, also inside encoded layers down to
// depth, re-encoding each changed layer the way it was encoded.
func redactText(s string, secrets []string, depth int) string {
	for _, sec := range secrets {
		if sec == "" {
			continue
		}
		s = strings.ReplaceAll(s, sec, maskOf(sec))
		if esc := strings.ReplaceAll(sec, "/", `\/`); esc != sec {
			s = strings.ReplaceAll(s, esc, maskOf(esc))
		}
	}
	if depth <= 0 {
		return s
	}
	runs := encodedRuns(s)
	if len(runs) > 0 {
		var b strings.Builder
		last := 0
		for _, r := range runs {
			if r.packed != "" {
				continue // not compressed again: the check after redaction finds what is left, and blocks
			}
			d := redactText(r.decoded, secrets, depth-1)
			if d == r.decoded || r.start < last {
				continue // unchanged, or the same run read another way, redacted already
			}
			b.WriteString(s[last:r.start])
			orig := s[r.start:r.end]
			b.WriteString(relayout(orig, reencode(r.enc, withoutLayout(orig), d)))
			last = r.end
		}
		if last > 0 {
			b.WriteString(s[last:])
			s = b.String()
		}
	}
	if hasPercent(s) {
		// Token by token, so that text around an escaped secret keeps its form.
		fields := strings.FieldsFunc(s, func(r rune) bool {
			return r == ' ' || r == '\n' || r == '\t' || r == '"' || r == '\'' || r == '<' || r == '>' || r == '&' || r == '='
		})
		for _, f := range fields {
			if !hasPercent(f) {
				continue
			}
			d := percentDecode(f)
			if r := redactText(d, secrets, depth-1); r != d {
				s = strings.ReplaceAll(s, f, percentEncode(r))
			}
		}
	}
	return s
}

// reencode encodes text as orig was encoded (padding kept as it was).
func reencode(enc, orig, text string) string {
	if inner, ok := strings.CutPrefix(enc, encReversed+" > "); ok {
		return reversed(reencode(inner, reversed(orig), text))
	}
	if n := rotOf(enc); n != 0 {
		return rot(text, n)
	}
	switch enc {
	case encReversed:
		return reversed(text)
	case encHex:
		h := hex.EncodeToString([]byte(text))
		if strings.ToUpper(orig) == orig {
			h = strings.ToUpper(h)
		}
		return h
	case encBase32:
		// The run holds at most two of base32's up to six '=' (encodedRuns),
		// the rest follow it: the same '=' as the run's keep the padding
		// whole, as a mask is as long as what it hides.
		body := strings.TrimRight(orig, "=")
		b := base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString([]byte(text))
		if strings.ToLower(body) == body {
			b = strings.ToLower(b)
		}
		return b + orig[len(body):]
	case encBase64URL:
		if strings.HasSuffix(orig, "=") {
			return base64.URLEncoding.EncodeToString([]byte(text))
		}
		return base64.RawURLEncoding.EncodeToString([]byte(text))
	default:
		if strings.HasSuffix(orig, "=") || len(orig)%4 == 0 {
			return base64.StdEncoding.EncodeToString([]byte(text))
		}
		return base64.RawStdEncoding.EncodeToString([]byte(text))
	}
}

// isBasicValue reports whether run r is the whole credential of a header
// "Name: Basic <run>".
func isBasicValue(g *segment, r run) bool {
	if g.header == "" || g.depth != 0 {
		return false
	}
	i := strings.Index(g.text, ": ")
	if i < 0 || i+2 > r.start {
		return false
	}
	return strings.EqualFold(strings.TrimSpace(g.text[i+2:r.start]), "Basic") && strings.TrimSpace(g.text[r.end:]) == ""
}

// decodeLines decodes the lines of s that has reports as encoded and
// returns them alone, one per line: the layer holds what decoding
// changed, not another copy of a long text with a few escapes (source
// code's "\n" and "%02x"), and each line keeps its context (a key before
// an encoded value). has is true only on a line that holds mark.
func decodeLines(s string, mark byte, has func(string) bool, dec func(string) string) (string, bool) {
	var parts []string
	for line := range linesHolding(s, mark, mark) {
		if !has(line) {
			continue
		}
		if d := dec(line); d != line {
			parts = append(parts, d)
		}
	}
	return layerOfLines(parts)
}

// layerOfLines is the text of a layer made of decoded lines: a line alone
// as it is, more one per line; ok is false for none.
func layerOfLines(parts []string) (string, bool) {
	switch len(parts) {
	case 0:
		return "", false
	case 1:
		return parts[0], true
	}
	n := 0
	for _, p := range parts {
		n += len(p) + 1
	}
	b := make([]byte, 0, n)
	for _, p := range parts {
		b = append(append(b, p...), '\n')
	}
	return ownString(b), true
}
