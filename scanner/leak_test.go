package scanner

import (
	"context"
	"encoding/base64"
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

// git over HTTPS sends a GitHub token as the password of Basic
// credentials: bound to GitHub there, a secret anywhere else.
func TestBasicCredentialsBinding(t *testing.T) {
	s := testScanner(t)
	tok := MustFake(t, "github-pat")
	basic := func(cred string) http.Header {
		return http.Header{"Authorization": {"Basic " + base64.StdEncoding.EncodeToString([]byte(cred))}}
	}
	for _, tc := range []struct {
		name   string
		host   string
		header http.Header
		want   Action
	}{
		{"bound host", "github.com", basic("x-access-token:" + tok), Pass},
		{"foreign host", "files.example.test", basic("x-access-token:" + tok), Block},
		{"more than the token", "github.com", basic("x-access-token:" + tok + " and more"), Block},
		{"other user", "github.com", basic("x:" + tok), Block},
		{"not basic", "github.com", http.Header{"Authorization": {"Token " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+tok))}}, Block},
		{"other header", "github.com", http.Header{"X-Note": {"Basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+tok))}}, Block},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := mustURL(t, "https://"+tc.host+"/o/r.git/info/refs")
			res, err := s.Scan(context.Background(), &Request{Host: tc.host, URL: u, Header: tc.header})
			if err != nil {
				t.Fatal(err)
			}
			if res.Verdict != tc.want {
				t.Fatalf("verdict %v, want %v:%s", res.Verdict, tc.want, dump(res.Findings))
			}
		})
	}
}

// An image that carries no data is not an exfiltration channel, even to a
// foreign host: badges and logos.
func TestImagesWithoutData(t *testing.T) {
	s := testScanner(t)
	for _, md := range []string{
		"![build](https://img.badges.example.test/badge/build-passing-brightgreen.svg)",
		"![coverage](https://img.badges.example.test/badge/coverage-93%25-green)",
		"![logo](https://cdn.example.test/assets/logo.png)",
	} {
		res, err := s.Scan(context.Background(), &Request{Header: http.Header{"Content-Type": {"text/markdown"}}, Body: strings.NewReader("# Readme\n" + md + "\n"),
			Allowed: func(string) bool { return false }})
		if err != nil {
			t.Fatal(err)
		}
		if res.Verdict != Pass {
			t.Errorf("%s: %v:%s", md, res.Verdict, dump(res.Findings))
		}
	}
	// The same image with data in it is one.
	res, _ := s.Scan(context.Background(), &Request{Header: http.Header{"Content-Type": {"text/markdown"}},
		Body:    strings.NewReader("![x](https://img.badges.example.test/badge.svg?d=" + randomString(base62, 40) + ")"),
		Allowed: func(string) bool { return false }})
	if res.Verdict != Block {
		t.Errorf("image with data: %v", res.Verdict)
	}
}
