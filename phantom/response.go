package phantom

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// Swap is one real secret and the phantom that replaces it in responses.
type Swap struct {
	Real, Phantom string
}

// expand adds the URL-escaped spellings of the secrets, as an upstream
// echoing a request URL would write them.
func expand(swaps []Swap) (olds, news []string) {
	for _, s := range swaps {
		if s.Real == "" {
			continue
		}
		olds, news = append(olds, s.Real), append(news, s.Phantom)
		if q := url.QueryEscape(s.Real); q != s.Real {
			olds, news = append(olds, q), append(news, url.QueryEscape(s.Phantom))
		}
	}
	return olds, news
}

// ScrubResponse replaces the real secrets an upstream echoes in a response
// with their phantoms, in header values and in the body (identity or gzip,
// streamed with bounded memory). A body in another encoding is passed through
// unchanged: skipped names that encoding ("" when none was skipped).
func ScrubResponse(resp *http.Response, swaps []Swap) (skipped string) {
	olds, news := expand(swaps)
	if len(olds) == 0 {
		return ""
	}
	pairs := make([]string, 0, 2*len(olds))
	for i := range olds {
		pairs = append(pairs, olds[i], news[i])
	}
	rep := strings.NewReplacer(pairs...)
	for k, vs := range resp.Header {
		for i, v := range vs {
			vs[i] = rep.Replace(v)
		}
		resp.Header[k] = vs
	}
	if resp.Body == nil || resp.Body == http.NoBody || resp.StatusCode == http.StatusSwitchingProtocols {
		// A 101's body is the upgraded connection, which stays as it is.
		return ""
	}
	enc := strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding")))
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
		return enc
	}
	return ""
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
