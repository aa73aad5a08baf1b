package scanner

import (
	"context"
	"encoding/ascii85"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// b85Encode is Python's base64.b85encode.
func b85Encode(b []byte) string {
	var sb strings.Builder
	for i := 0; i < len(b); i += 4 {
		var g [4]byte
		n := copy(g[:], b[i:])
		v := uint32(g[0])<<24 | uint32(g[1])<<16 | uint32(g[2])<<8 | uint32(g[3])
		var d [5]byte
		for k := 4; k >= 0; k-- {
			d[k] = b85Digits[v%85]
			v /= 85
		}
		sb.Write(d[:n+1])
	}
	return sb.String()
}

func a85Encode(b []byte) string {
	out := make([]byte, ascii85.MaxEncodedLen(len(b)))
	return string(out[:ascii85.Encode(out, b)])
}

// A token in ROT47, base85 or ascii85 in a URL's query or a header's value
// (where a link or an API call carries data out) is read back and found;
// ordinary URLs and headers with punctuation make no such layer.
func TestOddWordsHideNoToken(t *testing.T) {
	s := testScanner(t)
	for _, kind := range []string{"github-pat", "aws-access-token", "anthropic-api-key", "slack-bot-token", "stripe-access-token"} {
		tok := MustFake(t, kind)
		for enc, v := range map[string]string{
			encROT47:  rot47(tok),
			encBase85: b85Encode([]byte("token=" + tok)),
			encA85:    a85Encode([]byte("token=" + tok)),
			"adobe":   "<~" + a85Encode([]byte("token="+tok)) + "~>",
		} {
			want := enc
			if enc == "adobe" {
				want = encA85
			}
			for where, req := range map[string]*Request{
				"query":  {URL: mustURL(t, "https://img.test/p.png?d="+url.QueryEscape(v))},
				"header": {URL: mustURL(t, "https://api.test/"), Header: http.Header{"X-Trace": {v}}},
			} {
				res, err := s.Scan(context.Background(), req)
				if err != nil {
					t.Fatal(err)
				}
				found := false
				for _, f := range res.Findings {
					found = found || strings.Contains(string(f.secret), tok) && f.Decoding == want
				}
				if res.Verdict != Block || !found {
					t.Errorf("%s in %s in the %s: %v, want block with the token decoded as %s:%s", kind, enc, where, res.Verdict, want, dump(res.Findings))
				}
			}
		}
	}
	for _, text := range []string{
		"q={\"filter\":[\"a\",\"b\"],\"sort\":{\"by\":\"date\"}}\n",
		"Cookie: _ga=GA1.2.1234567890.1700000000; theme=dark; cart=[{\"id\":12,\"n\":1}]",
		"User-Agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0",
		"Accept: text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,*/*;q=0.8",
		"Content-Security-Policy: default-src 'self'; img-src 'self' data:; script-src 'none'",
	} {
		if a, b, r, ok := oddWords(text); ok {
			t.Errorf("%q: read as ascii85 %q, base85 %q, ROT47 %q", text, a, b, r)
		}
	}
}
