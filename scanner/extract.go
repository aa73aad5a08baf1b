package scanner

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/zstd"
)

// urlSegments are the request path and each query parameter, percent-decoded.
func urlSegments(u *url.URL) []*segment {
	segs := []*segment{{where: "url", text: u.Path}}
	if u.RawQuery == "" {
		return segs
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		// A malformed query is still scanned, as far as it decodes.
		if d, err := url.QueryUnescape(u.RawQuery); err == nil {
			return append(segs, &segment{where: "url", text: d})
		}
		return append(segs, &segment{where: "url", text: u.RawQuery})
	}
	var b strings.Builder
	for _, k := range sortedKeys(q) {
		for _, v := range q[k] {
			b.WriteString(k + "=" + v + "\n")
		}
	}
	return append(segs, &segment{where: "url", text: b.String()})
}

// urlEntropy flags query values that look like data rather than parameters.
func urlEntropy(u *url.URL) []Finding {
	var out []Finding
	q, _ := url.ParseQuery(u.RawQuery)
	for _, k := range sortedKeys(q) {
		for _, v := range q[k] {
			if len(v) >= 24 && entropy(v) >= 4.0 {
				out = append(out, Finding{Kind: KindExfilLink, Rule: RuleURLEntropy, Where: "url:query." + k,
					Snippet: k + "=" + mask(v), secret: secretText(v)})
			}
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// headerSegments are "Name: value" lines, one per value; names are h's,
// sorted.
func headerSegments(h http.Header, names []string) []*segment {
	var out []*segment
	for _, name := range names {
		cn := http.CanonicalHeaderKey(name)
		if cn == "Proxy-Authorization" {
			continue
		}
		for _, v := range h[name] {
			// The name as sent: canonicalising would change a token's case.
			out = append(out, &segment{where: "header:" + cn, header: cn, text: name + ": " + v})
		}
	}
	return out
}

// contentEncodings lists the body's codings in the order they were applied.
func contentEncodings(h http.Header) []string {
	var out []string
	for _, v := range h.Values("Content-Encoding") {
		for _, c := range strings.Split(v, ",") {
			c = strings.ToLower(strings.TrimSpace(c))
			if c != "" && c != "identity" {
				out = append(out, c)
			}
		}
	}
	return out
}

var errTooLarge = errors.New("decompressed body over the limit")

// decompress undoes the codings (last applied first), reading at most max
// bytes of output from each layer: a decompression bomb stops there.
func decompress(b []byte, encodings []string, max int64, m *meter) ([]byte, error) {
	for i := len(encodings) - 1; i >= 0; i-- {
		r, closeFn, err := decoder(encodings[i], b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", encodings[i], err)
		}
		hint := sizeHint(encodings[i], b, max)
		r, ok := m.counted(r, hint)
		if !ok {
			closeFn()
			return nil, ErrScanMemory
		}
		out, err := readAllHint(io.LimitReader(r, max+1), hint)
		closeFn()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", encodings[i], err)
		}
		if int64(len(out)) > max {
			return nil, errTooLarge
		}
		b = out
	}
	return b, nil
}

// streamJSON segments a compressed JSON body as it is decompressed, so
// that the decompressed body is never held whole beside its segments' texts
// (which are about as large). It returns nil segments and no error when it
// does not apply (no or several codings, not JSON by its type, not one
// JSON value), and the caller decompresses the body and segments it then;
// errTooLarge as decompress does.
func streamJSON(raw []byte, contentType string, encodings []string, max int64, ar *scanArena, m *meter) ([]*segment, error) {
	if mt, _, _ := mime.ParseMediaType(contentType); len(encodings) != 1 || !jsonType(mt) {
		return nil, nil
	}
	r, closeFn, err := decoder(encodings[0], raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", encodings[0], err)
	}
	defer closeFn()
	hint := sizeHint(encodings[0], raw, max)
	r, ok := m.counted(r, hint)
	if !ok {
		return nil, ErrScanMemory
	}
	segs, ok, err := jsonSegmentsStream(&maxReader{r: r, left: max}, hint, slices.Clone(encodings), ar)
	switch {
	case errors.Is(err, errTooLarge):
		return nil, errTooLarge
	case err != nil:
		return nil, fmt.Errorf("%s: %w", encodings[0], err)
	case !ok:
		return nil, nil // bodySegments decides what else the text is
	}
	if segs == nil {
		segs = []*segment{} // a JSON value without strings: it applied
	}
	return segs, nil
}

// maxReader is r that fails with errTooLarge past left bytes.
type maxReader struct {
	r    io.Reader
	left int64
}

func (m *maxReader) Read(p []byte) (int, error) {
	if m.left < 0 {
		return 0, errTooLarge
	}
	if int64(len(p)) > m.left+1 {
		p = p[:m.left+1]
	}
	n, err := m.r.Read(p)
	if m.left -= int64(n); m.left < 0 {
		return n, errTooLarge
	}
	return n, err
}

// decompressPrefix decodes the first bytes of a compressed body whose rest is
// not read (an oversize body the policy forwards): each layer yields what its
// truncated input holds, at most max bytes, and a layer that fails part way
// keeps what it decoded before. ok is false when not even a layer's header
// could be read, and the head is then scanned as it came.
func decompressPrefix(b []byte, encodings []string, max int64, m *meter) (out []byte, ok bool) {
	for i := len(encodings) - 1; i >= 0; i-- {
		r, closeFn, err := decoder(encodings[i], b)
		if err != nil {
			return nil, false
		}
		b, _ = readAllHint(io.LimitReader(m.reader(r), max), sizeHint(encodings[i], nil, max))
		closeFn()
	}
	return b, true
}

// sizeHint guesses a layer's decompressed size, to read it into one
// buffer instead of a doubling series: gzip's trailer holds it (modulo
// 2^32); for the others, four times the input.
func sizeHint(enc string, b []byte, max int64) int {
	n := int64(len(b)) * 4
	if (enc == "gzip" || enc == "x-gzip") && len(b) >= 18 {
		n = int64(binary.LittleEndian.Uint32(b[len(b)-4:]))
	}
	return int(min(n, max) + 1)
}

// readAllHint is io.ReadAll into a buffer of about hint bytes first.
func readAllHint(r io.Reader, hint int) ([]byte, error) {
	return readInto(r, make([]byte, 0, max(hint, 512)))
}

// readInto is io.ReadAll appending to b, which is grown (copied) only
// when r holds more than its capacity.
func readInto(r io.Reader, b []byte) ([]byte, error) {
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}

func decoder(enc string, b []byte) (io.Reader, func(), error) {
	nop := func() {}
	switch enc {
	case "gzip", "x-gzip":
		r, err := gzip.NewReader(bytes.NewReader(b))
		return r, nop, err
	case "deflate":
		// HTTP's deflate is zlib; some clients send raw deflate.
		if r, err := zlib.NewReader(bytes.NewReader(b)); err == nil {
			return r, nop, nil
		}
		return flate.NewReader(bytes.NewReader(b)), nop, nil
	case "br":
		return brotli.NewReader(bytes.NewReader(b)), nop, nil
	case "zstd":
		r, err := zstd.NewReader(bytes.NewReader(b), zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(256<<20))
		if err != nil {
			return nil, nop, err
		}
		return r, r.Close, nil
	}
	return nil, nop, fmt.Errorf("unsupported content encoding %q", enc)
}

// encoder compresses b again with enc, for redaction.
func encode(enc string, b []byte) ([]byte, error) {
	var buf bytes.Buffer
	var w io.WriteCloser
	switch enc {
	case "gzip", "x-gzip":
		w = gzip.NewWriter(&buf)
	case "deflate":
		w = zlib.NewWriter(&buf)
	case "br":
		w = brotli.NewWriter(&buf)
	case "zstd":
		zw, err := zstd.NewWriter(&buf, zstd.WithEncoderConcurrency(1))
		if err != nil {
			return nil, err
		}
		w = zw
	default:
		return nil, fmt.Errorf("unsupported content encoding %q", enc)
	}
	if _, err := w.Write(b); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// bodySegments splits a decompressed body by its type; ar, when not nil,
// holds the texts it cuts (scanArena).
func bodySegments(b []byte, contentType string, encodings []string, ar *scanArena) []*segment {
	chain := slices.Clone(encodings)
	mt, params, _ := mime.ParseMediaType(contentType)
	switch {
	case jsonType(mt) || (mt == "" || mt == "text/plain") && json1(b):
		if segs, ok := jsonSegments(b, chain, ar); ok {
			return segs
		}
	case mt == "application/x-www-form-urlencoded":
		if q, err := url.ParseQuery(string(b)); err == nil {
			var out []*segment
			for _, k := range sortedKeys(q) {
				for _, v := range q[k] {
					out = append(out, &segment{where: "form:" + k, chain: chain, text: k + "=" + v, body: true})
				}
			}
			return out
		}
	case strings.HasPrefix(mt, "multipart/") && params["boundary"] != "":
		if segs, ok := multipartSegments(b, params["boundary"], chain, ar); ok {
			return segs
		}
	}
	// The text shares b's bytes: the body read (or decoded) is never
	// written to after, and a copy would be as large as the body.
	return []*segment{{where: "body", chain: chain, text: bytesString(b), body: true, line: 1}}
}

// jsonType reports whether the media type mt says JSON.
func jsonType(mt string) bool { return mt == "application/json" || strings.HasSuffix(mt, "+json") }

// json1 reports whether b looks like a JSON object or array.
func json1(b []byte) bool {
	t := bytes.TrimSpace(b)
	return len(t) > 1 && (t[0] == '{' || t[0] == '[') && json.Valid(t)
}

// jsonSegments are the string values (and keys) of a JSON document, each
// with its path ("json:$.messages[3].content"); a value under an object key
// is seen as "key: value", so that rules keyed on names still match.
func jsonSegments(b []byte, chain []string, ar *scanArena) ([]*segment, bool) {
	if segs, ok := jsonSegmentsFast(b, chain, ar); ok {
		return segs, true
	}
	return jsonSegmentsDecoder(b, chain)
}

// jsonSegmentsDecoder walks b with encoding/json's decoder, token by token:
// it also reads a stream of values ("{...} {...}").
func jsonSegmentsDecoder(b []byte, chain []string) ([]*segment, bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	type frame struct {
		obj     bool
		key     string
		idx     int
		wantKey bool
	}
	var stack []frame
	var out []*segment
	pathOf := func(stack []frame) string {
		var sb strings.Builder
		sb.WriteString("json:$")
		for _, f := range stack {
			if f.obj {
				if plainKey(f.key) {
					sb.WriteString("." + f.key)
				} else {
					sb.WriteString("[" + strconv.Quote(f.key) + "]")
				}
			} else {
				sb.WriteString("[" + strconv.Itoa(f.idx) + "]")
			}
		}
		return sb.String()
	}
	path := func() string { return pathOf(stack) }
	// A run of character codes in an array, as jsonWalk reads it.
	var codes []byte
	var codesFrom int
	var codesPath string
	flushCodes := func() {
		if len(codes) >= minSpelled && slices.ContainsFunc(codes, isASCIILetter) {
			where := codesPath + "[" + strconv.Itoa(codesFrom) + ":" + strconv.Itoa(codesFrom+len(codes)) + "]"
			out = append(out, &segment{where: where, chain: chain, text: string(codes), body: true})
		}
		codes = codes[:0]
	}
	// after a value, advance the enclosing container.
	next := func() {
		if n := len(stack); n > 0 {
			if stack[n-1].obj {
				stack[n-1].wantKey = true
			} else {
				stack[n-1].idx++
			}
		}
	}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, false
		}
		switch v := tok.(type) {
		case json.Delim:
			flushCodes()
			switch v {
			case '{':
				stack = append(stack, frame{obj: true, wantKey: true})
			case '[':
				stack = append(stack, frame{})
			case '}', ']':
				stack = stack[:len(stack)-1]
				next()
			}
		case string:
			if n := len(stack); n > 0 && stack[n-1].obj && stack[n-1].wantKey {
				stack[n-1].key, stack[n-1].wantKey = v, false
				continue
			}
			flushCodes()
			text := v
			if n := len(stack); n > 0 && stack[n-1].obj {
				text = stack[n-1].key + ": " + v
			}
			out = append(out, &segment{where: path(), chain: chain, text: text, body: true})
			next()
		default:
			if n := len(stack); n > 0 && !stack[n-1].obj {
				num, _ := v.(json.Number)
				if c, ok := charCodeAt([]byte(num)); ok {
					if len(codes) == 0 {
						codesFrom, codesPath = stack[n-1].idx, pathOf(stack[:n-1])
					}
					codes = append(codes, c)
				} else {
					flushCodes()
				}
			}
			next()
		}
	}
	return out, true
}

// plainKey reports whether k is written .k in a path: [A-Za-z_][A-Za-z0-9_]*.
func plainKey(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c == '_' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// multipartSegments are the parts of a multipart body, each read by its own
// type; a base64 Content-Transfer-Encoding is undone.
func multipartSegments(b []byte, boundary string, chain []string, ar *scanArena) ([]*segment, bool) {
	mr := multipart.NewReader(bytes.NewReader(b), boundary)
	// The reader skips what comes before the first boundary and after the
	// last: a sender can put anything there, so it is scanned too.
	out := outsideParts(b, boundary, chain)
	for i := 0; ; i++ {
		p, err := mr.NextRawPart()
		if err == io.EOF {
			return out, true
		}
		if err != nil {
			return nil, false
		}
		data, err := io.ReadAll(p)
		if err != nil {
			return nil, false
		}
		name := p.FormName()
		if name == "" {
			name = strconv.Itoa(i)
		}
		c := slices.Clone(chain)
		switch cte := p.Header.Get("Content-Transfer-Encoding"); {
		case strings.EqualFold(cte, "base64"):
			d, err := base64.StdEncoding.DecodeString(strings.Map(dropSpace, string(data)))
			if err == nil {
				data = d
				c = append(c, "base64")
			}
		case strings.EqualFold(cte, "quoted-printable"):
			data = []byte(qpDecode(string(data)))
			c = append(c, encQP)
		}
		for _, sg := range bodySegments(data, p.Header.Get("Content-Type"), c, ar) {
			sg.where = "multipart:" + name + strings.TrimPrefix(strings.TrimPrefix(sg.where, "body"), "json:")
			sg.line = 0
			out = append(out, sg)
		}
		for k, vs := range p.Header {
			for _, v := range vs {
				out = append(out, &segment{where: "multipart:" + name + ":header", chain: chain, text: k + ": " + v, body: true})
			}
		}
	}
}

// outsideParts are a multipart body's preamble and epilogue, when they
// hold more than white space.
func outsideParts(b []byte, boundary string, chain []string) []*segment {
	var out []*segment
	add := func(where string, t []byte) {
		if len(bytes.TrimSpace(t)) > 0 {
			out = append(out, &segment{where: where, chain: chain, text: string(t), body: true})
		}
	}
	delim := []byte("--" + boundary)
	first := bytes.Index(b, delim)
	if first < 0 {
		add("multipart:preamble", b)
		return out
	}
	add("multipart:preamble", b[:first])
	if last := bytes.LastIndex(b, append(delim, '-', '-')); last >= 0 {
		add("multipart:epilogue", b[last+len(delim)+2:])
	}
	return out
}

func dropSpace(r rune) rune {
	if r == '\r' || r == '\n' || r == ' ' || r == '\t' {
		return -1
	}
	return r
}

// entropy is the Shannon entropy of s in bits per byte.
func entropy(s string) float64 {
	if s == "" {
		return 0
	}
	var counts [256]int
	for i := 0; i < len(s); i++ {
		counts[s[i]]++
	}
	var h float64
	n := float64(len(s))
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / n
			h -= p * math.Log2(p)
		}
	}
	return h
}
