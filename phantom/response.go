package phantom

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// Swap is one real secret and the phantom that replaces it in responses.
type Swap struct {
	Real, Phantom string
}

// ErrUnscrubbable is returned for a response whose body is in an encoding
// the scrub cannot read (br, zstd, deflate, stacked encodings): it must not
// reach the sandbox, since it may carry a real secret the scrub could not see.
var ErrUnscrubbable = errors.New("phantom: response body in an encoding that cannot be scrubbed")

// Scrubber replaces real secrets with their phantoms in every spelling
// listed by expand. A nil *Scrubber replaces nothing.
type Scrubber struct {
	olds, news []string
	rep        *strings.Replacer
}

// NewScrubber returns the scrubber for swaps; nil when there is nothing to
// replace.
func NewScrubber(swaps []Swap) *Scrubber {
	olds, news := expand(swaps)
	if len(olds) == 0 {
		return nil
	}
	pairs := make([]string, 0, 2*len(olds))
	for i := range olds {
		pairs = append(pairs, olds[i], news[i])
	}
	return &Scrubber{olds: olds, news: news, rep: strings.NewReplacer(pairs...)}
}

// expand lists the spellings of each secret an upstream could hand back,
// each with the phantom spelled the same way, in the order of swaps (a
// longer spelling of a secret, such as a padded base64 pair, is listed
// before a shorter one it starts with, and wins): as is, and
// percent-encoded as a query or a path segment, in upper- and lower-case
// hex, as an upstream echoing a request URL would write them.
func expand(swaps []Swap) (olds, news []string) {
	seen := map[string]bool{}
	add := func(o, n string) {
		if o != "" && !seen[o] {
			seen[o] = true
			olds, news = append(olds, o), append(news, n)
		}
	}
	for _, s := range swaps {
		if s.Real == "" {
			continue
		}
		add(s.Real, s.Phantom)
		for _, esc := range []func(string) string{url.QueryEscape, url.PathEscape} {
			q, p := esc(s.Real), esc(s.Phantom)
			add(q, p)
			add(lowerHex(q), lowerHex(p))
		}
	}
	return olds, news
}

// lowerHex spells s's percent-escapes in lower-case hex.
func lowerHex(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			b[i+1], b[i+2] = lowerByte(b[i+1]), lowerByte(b[i+2])
			i += 2
		}
	}
	return string(b)
}

func lowerByte(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + ('a' - 'A')
	}
	return c
}

// Header replaces the secrets in h's values, in place.
func (s *Scrubber) Header(h http.Header) {
	if s == nil {
		return
	}
	for k, vs := range h {
		for i, v := range vs {
			vs[i] = s.rep.Replace(v)
		}
		h[k] = vs
	}
}

// Bytes returns b with the secrets replaced (b itself when none is there).
func (s *Scrubber) Bytes(b []byte) []byte {
	if s == nil {
		return b
	}
	for _, o := range s.olds {
		if bytes.Contains(b, []byte(o)) {
			return []byte(s.rep.Replace(string(b)))
		}
	}
	return b
}

// ScrubResponse replaces the real secrets an upstream echoes in a response
// with their phantoms (see Scrubber.Response).
func ScrubResponse(resp *http.Response, swaps []Swap) error {
	return NewScrubber(swaps).Response(resp)
}

// Response replaces the secrets in resp's header values and body (identity
// or gzip, streamed with bounded memory: a request whose response will be
// scrubbed should offer the upstream no other encoding). A body in any other encoding, or
// in more than one, is ErrUnscrubbable: resp is left as it is, for the
// caller to refuse. Trailers arrive with the end of the body: the caller
// scrubs them with Header then.
func (s *Scrubber) Response(resp *http.Response) error {
	if s == nil {
		return nil
	}
	s.Header(resp.Header)
	if resp.Body == nil || resp.Body == http.NoBody || resp.StatusCode == http.StatusSwitchingProtocols {
		// A 101's body is the upgraded connection, which stays as it is.
		return nil
	}
	olds, news := s.olds, s.news
	var codings []string
	for _, v := range resp.Header.Values("Content-Encoding") {
		for c := range strings.SplitSeq(v, ",") {
			if c = strings.ToLower(strings.TrimSpace(c)); c != "" {
				codings = append(codings, c)
			}
		}
	}
	enc := ""
	switch {
	case len(codings) == 1:
		enc = codings[0]
	case len(codings) > 1:
		return ErrUnscrubbable
	}
	switch enc {
	case "", "identity":
		resp.Body = &readCloser{Reader: newReplaceReader(resp.Body, olds, news), Closer: resp.Body}
		if !sameLengths(olds, news) {
			resp.ContentLength = -1
			resp.Header.Del("Content-Length")
		}
	case "gzip", "x-gzip":
		orig := resp.Body
		pr, pw := io.Pipe()
		go func() {
			zr, err := gzip.NewReader(orig)
			if err != nil {
				pw.CloseWithError(err)
				return
			}
			zw := gzip.NewWriter(pw)
			_, err = io.Copy(zw, newReplaceReader(zr, olds, news))
			if err == nil {
				err = zw.Close()
			}
			pw.CloseWithError(err)
		}()
		resp.Body = &readCloser{Reader: pr, Closer: closers{pr, orig}}
		resp.ContentLength = -1
		resp.Header.Del("Content-Length")
	default:
		return ErrUnscrubbable
	}
	return nil
}

func sameLengths(olds, news []string) bool {
	for i := range olds {
		if len(olds[i]) != len(news[i]) {
			return false
		}
	}
	return true
}

type readCloser struct {
	io.Reader
	io.Closer
}

type closers []io.Closer

func (cs closers) Close() error {
	var first error
	for _, c := range cs {
		if err := c.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// replaceReader replaces every old with its new as the bytes stream by,
// holding back only what could be the start of a match.
type replaceReader struct {
	src    io.Reader
	olds   [][]byte
	news   [][]byte
	maxOld int
	buf    []byte // read, not processed
	out    []byte // processed, not returned
	eof    bool
	err    error
}

func newReplaceReader(src io.Reader, olds, news []string) *replaceReader {
	r := &replaceReader{src: src}
	for i := range olds {
		r.olds = append(r.olds, []byte(olds[i]))
		r.news = append(r.news, []byte(news[i]))
		r.maxOld = max(r.maxOld, len(olds[i]))
	}
	return r
}

func (r *replaceReader) Read(p []byte) (int, error) {
	for len(r.out) == 0 {
		if r.eof {
			if len(r.buf) == 0 {
				if r.err != nil {
					return 0, r.err
				}
				return 0, io.EOF
			}
			r.process()
			continue
		}
		chunk := make([]byte, 32<<10)
		n, err := r.src.Read(chunk)
		r.buf = append(r.buf, chunk[:n]...)
		if err != nil {
			r.eof = true
			if err != io.EOF {
				r.err = err
			}
		}
		r.process()
	}
	n := copy(p, r.out)
	r.out = r.out[n:]
	return n, nil
}

// process moves what can no longer be part of an unfinished match from buf
// to out, replacing matches on the way.
func (r *replaceReader) process() {
	limit := len(r.buf)
	if !r.eof {
		limit = len(r.buf) - (r.maxOld - 1)
	}
	i := 0
	for i < limit {
		best, which := -1, -1
		for k, o := range r.olds {
			j := bytes.Index(r.buf[i:], o)
			if j >= 0 && i+j < limit && (best < 0 || i+j < best) {
				best, which = i+j, k
			}
		}
		if best < 0 {
			r.out = append(r.out, r.buf[i:limit]...)
			i = limit
			break
		}
		r.out = append(r.out, r.buf[i:best]...)
		r.out = append(r.out, r.news[which]...)
		i = best + len(r.olds[which])
	}
	r.buf = append(r.buf[:0], r.buf[max(i, 0):]...)
}
