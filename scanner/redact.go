package scanner

import (
	"bytes"
	"context"
	"errors"
	"net/http"
)

// errNotRedacted means a secret survived redaction: the caller blocks.
var errNotRedacted = errors.New("scanner: redaction incomplete")

// redact replaces the secrets of Redact findings in the URL, headers and
// decompressed body, compresses the body again, and checks the result by
// scanning it once more: a secret that is still there is an error.
func (s *Scanner) redact(ctx context.Context, req *Request, plain []byte, encodings []string, res *Result) error {
	var secrets []string
	want := map[string]bool{}
	for _, f := range res.Findings {
		if f.Action == Redact && f.secret != "" {
			secrets = append(secrets, string(f.secret))
			want[f.Fingerprint] = true
		}
	}
	if len(secrets) == 0 {
		return errNotRedacted
	}
	depth := s.depth()
	out := &Request{Tenant: req.Tenant, Host: req.Host, Allowed: req.Allowed}
	if req.URL != nil {
		u := *req.URL
		u.RawQuery = redactText(u.RawQuery, secrets, depth+1)
		if p := redactText(u.Path, secrets, depth); p != u.Path {
			u.Path, u.RawPath = p, ""
		}
		if u.String() != req.URL.String() {
			res.URL = &u
		}
		out.URL = &u
	}
	if req.Header != nil {
		h := req.Header.Clone()
		changed := false
		for name, vs := range h {
			for i, v := range vs {
				if r := redactText(v, secrets, depth); r != v {
					vs[i], changed = r, true
				}
			}
			h[name] = vs
		}
		if changed {
			res.Header = h
		}
		out.Header = h
	}
	if plain != nil {
		red := []byte(redactText(string(plain), secrets, depth))
		if !bytes.Equal(red, plain) {
			body := red
			for _, enc := range encodings {
				var err error
				if body, err = encode(enc, body); err != nil {
					return err
				}
			}
			res.Body, res.BodyLen = bytes.NewReader(body), int64(len(body))
			if res.Header == nil {
				res.Header = out.Header.Clone()
			}
			if res.Header == nil {
				res.Header = http.Header{}
			}
			res.Header.Del("Content-Length")
			out.Body = bytes.NewReader(body)
		} else {
			out.Body = bytes.NewReader(plainOrRaw(res))
		}
	}
	check, err := s.scan(ctx, out, false)
	if err != nil {
		return err
	}
	for _, f := range check.Findings {
		if want[f.Fingerprint] {
			return errNotRedacted
		}
	}
	if res.Body != nil {
		if br, ok := res.Body.(*bytes.Reader); ok {
			br.Seek(0, 0)
		}
	}
	return nil
}

// plainOrRaw returns the body bytes the result forwards.
func plainOrRaw(res *Result) []byte {
	br, ok := res.Body.(*bytes.Reader)
	if !ok {
		return nil
	}
	b := make([]byte, br.Len())
	br.ReadAt(b, 0)
	return b
}
