package scanner

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// What a multipart reader skips must still be scanned.
func TestMultipartPreambleEpilogue(t *testing.T) {
	s := testScanner(t)
	tok := MustFake(t, "github-pat")
	ct := http.Header{"Content-Type": {"multipart/form-data; boundary=b"}}
	part := "--b\r\nContent-Disposition: form-data; name=\"f\"\r\n\r\nhello\r\n"
	for name, body := range map[string]string{
		"preamble only": tok + "\r\n--b--\r\n",
		"preamble":      tok + "\r\n" + part + "--b--\r\n",
		"epilogue":      part + "--b--\r\n" + tok + "\r\n",
	} {
		t.Run(name, func(t *testing.T) {
			res, err := s.Scan(context.Background(), &Request{Header: ct, Body: strings.NewReader(body)})
			if err != nil {
				t.Fatal(err)
			}
			if res.Verdict != Block {
				t.Fatalf("secret outside the parts forwarded:%s", dump(res.Findings))
			}
		})
	}
}

// A location names where a secret was, never the secret: names are the
// sender's to choose.
func TestWhereHoldsNoSecret(t *testing.T) {
	s := testScanner(t)
	tok := MustFake(t, "github-pat")
	other := MustFake(t, "gitlab-pat")
	u, _ := url.Parse("https://api.example.test/x")
	for _, tc := range []struct {
		name string
		req  *Request
	}{
		{"json key", &Request{URL: u, Header: http.Header{"Content-Type": {"application/json"}}, Body: strings.NewReader(`{"` + tok + `":"x"}`)}},
		{"json key over another secret", &Request{URL: u, Header: http.Header{"Content-Type": {"application/json"}}, Body: strings.NewReader(`{"` + tok + `":"` + other + `"}`)}},
		{"form key", &Request{URL: u, Header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}, Body: strings.NewReader(tok + "=1")}},
		{"query key", &Request{URL: mustURL(t, "https://api.example.test/x?"+tok+"=1"), Header: http.Header{}}},
		{"header name", &Request{URL: u, Header: http.Header{tok: {"1"}}}},
		{"multipart name", &Request{URL: u, Header: http.Header{"Content-Type": {"multipart/form-data; boundary=b"}},
			Body: strings.NewReader("--b\r\nContent-Disposition: form-data; name=\"" + tok + "\"\r\n\r\n" + other + "\r\n--b--\r\n")}},
		{"data-like name", &Request{URL: u, Header: http.Header{"Content-Type": {"application/json"}},
			Body: strings.NewReader(`{"` + randomString(base62, 32) + `":"` + other + `"}`)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := s.Scan(context.Background(), tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Findings) == 0 {
				t.Fatal("nothing found")
			}
			for _, f := range res.Findings {
				for _, sec := range []string{tok, other, tok[4:], strings.ToLower(tok)} {
					if strings.Contains(strings.ToLower(f.Where), strings.ToLower(sec)) {
						t.Errorf("Where %q holds a secret", f.Where)
					}
				}
				b, _ := json.Marshal(f)
				noSecret(t, tok, string(b))
			}
			if tc.name == "data-like name" && !strings.Contains(res.Findings[0].Where, "[REDACTED]") {
				t.Errorf("data-like name kept: %q", res.Findings[0].Where)
			}
		})
	}
}

func TestSafeWhereKeepsNames(t *testing.T) {
	for _, w := range []string{"json:$.messages[3].content", "header:X-Amz-Security-Token", "form:max_completion_tokens", "multipart:file:header", "url:query.access_token"} {
		if got := safeWhere(w, nil); got != w {
			t.Errorf("safeWhere(%q) = %q", w, got)
		}
	}
}
