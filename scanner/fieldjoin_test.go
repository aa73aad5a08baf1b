package scanner

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// A token cut into a request's fields is found: in the query, the path, the
// headers, the cookies and a form, in three pieces at any cut, of formats
// whose patterns want an edge before or after the token (stripe, slack)
// and of ones that do not (github).
func TestFieldPiecesHideNoToken(t *testing.T) {
	s := testScanner(t)
	u := func(raw string) *url.URL { return mustURL(t, raw) }
	for _, kind := range []string{"github-pat", "aws-access-token", "stripe-access-token", "slack-bot-token", "gitlab-pat", "anthropic-api-key"} {
		tok := generatedFake(t, kind)
		for _, cut := range [][2]int{{2, 9}, {len(tok) / 3, 2 * len(tok) / 3}, {5, len(tok) - 3}} {
			a, b, c := tok[:cut[0]], tok[cut[0]:cut[1]], tok[cut[1]:]
			q := url.QueryEscape
			for name, r := range map[string]*Request{
				"query":            {URL: u("https://x.test/p?v=2&z=" + q(a) + "&b=" + q(b) + "&a=" + q(c) + "&page=3")},
				"one name":         {URL: u("https://x.test/p?d=" + q(a) + "&d=" + q(b) + "&d=" + q(c))},
				"query names":      {URL: u("https://x.test/p?" + q(a) + "&" + q(b) + "&" + q(c))},
				"name and value":   {URL: u("https://x.test/p?" + q(a+b) + "=" + q(c))},
				"path":             {URL: u("https://x.test/api/" + a + "/" + b + "/" + c + "/x")},
				"headers":          {URL: u("https://x.test/"), Header: http.Header{"X-A": {a}, "X-B": {b}, "X-C": {c}, "Accept-Encoding": {"gzip"}}},
				"headers reversed": {URL: u("https://x.test/"), Header: http.Header{"X-Z": {a + b}, "X-A": {c}, "Accept-Encoding": {"gzip"}}},
				"cookies":          {URL: u("https://x.test/"), Header: http.Header{"Cookie": {"z=" + a + "; a=" + b + "; m=" + c + "; theme=dark"}}},
				"cookie name":      {URL: u("https://x.test/"), Header: http.Header{"Cookie": {a + b + "=" + c}}},
				"form":             {URL: u("https://x.test/"), Header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}, Body: strings.NewReader("user=bob&z=" + q(a) + "&a=" + q(b) + "&b=" + q(c))},
				"form name, value": {URL: u("https://x.test/"), Header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}, Body: strings.NewReader(q(a+b) + "=" + q(c))},
				"multipart":        {URL: u("https://x.test/"), Header: http.Header{"Content-Type": {"multipart/form-data; boundary=b"}}, Body: strings.NewReader(multipartOf("note", "hi there", "z", a, "a", b, "m", c))},
			} {
				res, err := s.Scan(context.Background(), r)
				if err != nil {
					t.Fatal(err)
				}
				// The pattern may read on into the next piece (stripe's
				// reads any number of letters): the token, and perhaps more.
				found := false
				for _, f := range res.Findings {
					found = found || strings.Contains(string(f.secret), tok) && strings.HasSuffix(f.Decoding, encJoinedFields)
				}
				if res.Verdict != Block || !found {
					t.Errorf("%s cut at %v in %s: %v:%s", kind, cut, name, res.Verdict, dump(res.Findings))
				}
				for _, f := range res.Findings {
					if strings.Contains(f.Where+f.Snippet, b) {
						t.Errorf("%s in %s: a piece in clear in %q %q", kind, name, f.Where, f.Snippet)
					}
				}
				if name == "path" && strings.Contains(res.Path, b) {
					t.Errorf("%s: the path keeps a piece: %q", kind, res.Path)
				}
			}
		}
	}
}

// A token encoded (base64, base64url, hex, base32) and then cut into a
// request's fields is found by its pieces joined and decoded, though no
// piece shows a keyword.
func TestEncodedFieldPiecesHideNoToken(t *testing.T) {
	s := testScanner(t)
	u := func(raw string) *url.URL { return mustURL(t, raw) }
	q := url.QueryEscape
	for _, kind := range []string{"github-pat", "aws-access-token", "stripe-access-token", "anthropic-api-key"} {
		tok := generatedFake(t, kind)
		for enc, encode := range map[string]func([]byte) string{
			"base64": base64.StdEncoding.EncodeToString, "base64url": base64.RawURLEncoding.EncodeToString,
			"hex": hex.EncodeToString, "base32": base32.StdEncoding.EncodeToString,
		} {
			v := encode([]byte("token=" + tok))
			a, b, c := v[:len(v)/3], v[len(v)/3:2*len(v)/3], v[2*len(v)/3:]
			for name, r := range map[string]*Request{
				"query":     {URL: u("https://x.test/p?v=2&z=" + q(a) + "&b=" + q(b) + "&a=" + q(c) + "&page=3")},
				"path":      {URL: u("https://x.test/api/" + a + "/" + b + "/" + c + "/x")},
				"headers":   {URL: u("https://x.test/"), Header: http.Header{"X-A": {a}, "X-B": {b}, "X-C": {c}, "Accept-Encoding": {"gzip"}}},
				"cookies":   {URL: u("https://x.test/"), Header: http.Header{"Cookie": {"z=" + a + "; a=" + b + "; m=" + c + "; theme=dark"}}},
				"form":      {URL: u("https://x.test/"), Header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}, Body: strings.NewReader("user=bob&z=" + q(a) + "&a=" + q(b) + "&b=" + q(c))},
				"multipart": {URL: u("https://x.test/"), Header: http.Header{"Content-Type": {"multipart/form-data; boundary=b"}}, Body: strings.NewReader(multipartOf("note", "hi there", "z", a, "a", b, "m", c))},
			} {
				res, err := s.Scan(context.Background(), r)
				if err != nil {
					t.Fatal(err)
				}
				// base64url without its own digits decodes as base64.
				found, want := false, encJoinedFields+" > "+strings.TrimSuffix(enc, "url")
				for _, f := range res.Findings {
					found = found || strings.Contains(string(f.secret), tok) && strings.HasPrefix(f.Decoding, want)
				}
				if res.Verdict != Block || !found {
					t.Errorf("%s in %s cut in %s: %v:%s", kind, enc, name, res.Verdict, dump(res.Findings))
				}
			}
		}
	}
}

// What a client sends on every request joins into nothing found: an SDK's
// headers, ids and hashes in a query, a credential bound to its host in its
// header beside other values, a phantom in its place.
func TestFieldPiecesOfOrdinaryRequests(t *testing.T) {
	s := testScanner(t)
	key := MustFake(t, "anthropic-api-key")
	sdk := http.Header{
		"User-Agent": {"Anthropic/JS 0.30.1"}, "X-Stainless-Arch": {"x64"}, "X-Stainless-Lang": {"js"}, "X-Stainless-Os": {"Linux"},
		"X-Stainless-Package-Version": {"0.30.1"}, "X-Stainless-Runtime": {"node"}, "X-Stainless-Runtime-Version": {"v20.20.2"},
		"Accept": {"application/json"}, "Content-Type": {"application/json"}, "Anthropic-Version": {"2023-06-01"},
		"Idempotency-Key": {"stainless-node-retry-3f2b9c1e-8a7d-4e2f-9b1c-0d5e6f7a8b9c"}, "X-Stainless-Retry-Count": {"0"},
		"Traceparent": {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}, "X-Api-Key": {key}, "X-Stainless-Timeout": {"600"},
	}
	for name, r := range map[string]*Request{
		"bound key in an SDK's headers": {Host: "api.anthropic.com", URL: mustURL(t, "https://api.anthropic.com/v1/messages"), Header: sdk},
		"ids and hashes":                {URL: mustURL(t, "https://x.test/repos/acme/widget/commits/4bf92f3577b34da6a3ce929d0e0e4736?per_page=100&page=3&sha=00f067aa0ba902b7&since=2024-01-15T00:00:00Z&user=41234&item=98765432")},
		"a form": {URL: mustURL(t, "https://x.test/login"), Header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}},
			Body: strings.NewReader("grant_type=client_credentials&client_id=sluice-ci&scope=read%3Apackages&state=af0ifjsldkj")},
		"cookies": {URL: mustURL(t, "https://x.test/"), Header: http.Header{"Cookie": {"_ga=GA1.2.1234567890.1700000000; _gid=GA1.2.987654321.1700000000; theme=dark; lang=en"}}},
	} {
		res, err := s.Scan(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		if res.Verdict != Pass {
			t.Errorf("%s: %v:%s", name, res.Verdict, dump(res.Findings))
		}
	}
	// A key sent bare in its bound header, whose pattern reads on into the
	// next header's value: the joined match holds the bound key, and is
	// bound with it.
	slack := generatedFake(t, "slack-bot-token")
	res, err := s.Scan(context.Background(), &Request{Host: "slack.com", URL: mustURL(t, "https://slack.com/api/chat.postMessage"),
		Header: http.Header{"Authorization": {slack}, "X-Slack-Retry-Num": {"3a"}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != Pass {
		t.Errorf("a bound key beside another header: %v:%s", res.Verdict, dump(res.Findings))
	}
	// The bound key to another host is refused, once.
	res, err = s.Scan(context.Background(), &Request{Host: "collector.test", URL: mustURL(t, "https://collector.test/"), Header: sdk})
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != Block || len(res.Findings) != 1 || strings.HasSuffix(res.Findings[0].Decoding, encJoinedFields) {
		t.Errorf("the key to a foreign host: %v:%s", res.Verdict, dump(res.Findings))
	}
}

// Any pieces around a token cut at any two points: the joins never fail
// or panic, and the token cut into three query values is found.
func FuzzFieldPieces(f *testing.F) {
	f.Add("v=2&page=3", "x64", uint8(3), uint8(14))
	f.Add("", "", uint8(1), uint8(39))
	f.Add("a=%zz&&=&b", "sk-\x00", uint8(20), uint8(21))
	s := testScanner(f)
	tok := "ghp_" + strings.Repeat("Ab1Cd2Ef3G", 4)[:36]
	f.Fuzz(func(t *testing.T, query, header string, i, j uint8) {
		a, b := 1+int(i)%(len(tok)-2), 0
		b = a + 1 + int(j)%(len(tok)-a-1)
		q := url.QueryEscape
		raw := "x=" + q(tok[:a]) + "&y=" + q(tok[a:b]) + "&z=" + q(tok[b:])
		if query != "" {
			raw = query + "&" + raw
		}
		u := &url.URL{Scheme: "https", Host: "x.test", Path: "/p", RawQuery: raw}
		res, err := s.Scan(context.Background(), &Request{URL: u, Header: http.Header{"X-F": {header}}, Source: "f", Host: "x.test"})
		if err != nil {
			t.Fatal(err)
		}
		if res.Verdict != Block {
			t.Fatalf("cut at %d and %d after %q: %v:%s", a, b, query, res.Verdict, dump(res.Findings))
		}
	})
}

// generatedFake is a fake credential of kind that looks generated
// (randomRun), as joined pieces must to be reported: a random AWS key id
// has no digit 1 time in 28, a GitLab token 1 in 33, and is then missed.
func generatedFake(t testing.TB, kind string) string {
	for {
		if tok := MustFake(t, kind); randomRun(tok) {
			return tok
		}
	}
}

// multipartOf is a multipart/form-data body with boundary "b" of the name
// and value pairs in nv, in order, as curl -F sends them.
func multipartOf(nv ...string) string {
	var b strings.Builder
	for i := 0; i+1 < len(nv); i += 2 {
		b.WriteString("--b\r\nContent-Disposition: form-data; name=\"" + nv[i] + "\"\r\n\r\n" + nv[i+1] + "\r\n")
	}
	b.WriteString("--b--\r\n")
	return b.String()
}

// A token folded over lines (fold -w, a hard-wrapped message) is found:
// every line of it a piece, or its first part the last word of a line,
// when no line break cuts the keyword itself (a documented miss).
func TestFoldedTokenFound(t *testing.T) {
	s := testScanner(t)
	for _, kind := range []string{"github-pat", "stripe-access-token", "slack-bot-token", "gitlab-pat"} {
		tok := generatedFake(t, kind)
		head := strings.IndexAny(tok, "_-") + 3 // the prefix and two more
		for _, width := range []int{8, 10, 17, 33} {
			if width >= len(tok) {
				continue // one line: not folded
			}
			fold := func(text, eol string) string {
				var b strings.Builder
				for line := range strings.SplitSeq(text, "\n") {
					for len(line) > width {
						b.WriteString(line[:width] + eol)
						line = line[width:]
					}
					b.WriteString(line + eol)
				}
				return b.String()
			}
			file := tok + "\nREGION=eu-west-1\n"
			for name, body := range map[string]struct{ ct, text string }{
				"fold":        {"text/plain", "# the token\n" + fold(file, "\n")},
				"fold, CRLF":  {"text/plain", "# the token\r\n" + fold(file, "\r\n")},
				"after words": {"text/plain", "here it is: " + tok[:head] + "\n" + fold(tok[head:], "\n") + "thanks\n"},
				"in JSON":     {"application/json", `{"text":"` + strings.ReplaceAll("see\n"+fold(file, "\n"), "\n", `\n`) + `"}`},
			} {
				res := scanTyped(t, s, body.ct, body.text)
				found := false
				for _, f := range res.Findings {
					found = found || strings.Contains(string(f.secret), tok) && strings.HasSuffix(f.Decoding, encFolded)
				}
				if res.Verdict != Block || !found {
					t.Errorf("%s folded at %d, %s: %v:%s", kind, width, name, res.Verdict, dump(res.Findings))
				}
			}
		}
	}
	// Lines of pieces that hold no token: a wrapped certificate, a column
	// of numbers, a list of hashes with a keyword's letters in them.
	cert := wrapLines(base64.StdEncoding.EncodeToString(bytes.Repeat([]byte("sk-ey\x00\x81xoxb"), 300)), 64, "\n")
	var nums, hashes strings.Builder
	for i := range 40 {
		fmt.Fprintf(&nums, "%d\n", 4111111111+i*7919)
		fmt.Fprintf(&hashes, "sk%x\n", sha256.Sum256([]byte{byte(i)}))
	}
	for _, benign := range []string{"-----BEGIN CERTIFICATE-----\n" + cert + "\n-----END CERTIFICATE-----\n", nums.String(), hashes.String()} {
		if res := scanTyped(t, s, "text/plain", benign); res.Verdict == Block {
			t.Errorf("%.40q: %v:%s", benign, res.Verdict, dump(res.Findings))
		}
	}
}

// Any text around a token folded at any width: no panic, and the token is
// found when no line break cuts its keyword.
func FuzzFoldedLines(f *testing.F) {
	f.Add("# notes\n", "thanks\n", uint8(8))
	f.Add("", "", uint8(5))
	f.Add("a b\r\nsk_\n\n", "\x00ey\n", uint8(40))
	s := testScanner(f)
	tok := "ghp_" + strings.Repeat("Ab1Cd2Ef3G", 4)[:36]
	f.Fuzz(func(t *testing.T, before, after string, w uint8) {
		width := 5 + int(w)%30
		var b strings.Builder
		for line := tok; ; line = line[width:] {
			if len(line) <= width {
				b.WriteString(line + "\n")
				break
			}
			b.WriteString(line[:width] + "\n")
		}
		if before != "" && !strings.HasSuffix(before, "\n") {
			before += "\n"
		}
		res := scanTyped(t, s, "text/plain", before+b.String()+"\n"+after)
		if res.Verdict != Block {
			t.Fatalf("folded at %d after %q: %v:%s", width, before, res.Verdict, dump(res.Findings))
		}
	})
}
