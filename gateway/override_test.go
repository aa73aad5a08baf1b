package gateway_test

import (
	"bytes"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
)

func multipartBody(t *testing.T, fields [][2]string, file []byte) (string, []byte) {
	t.Helper()
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	if file != nil {
		fw, _ := mw.CreateFormFile("upload", "data.bin")
		fw.Write(file)
	}
	for _, f := range fields {
		mw.WriteField(f[0], f[1])
	}
	mw.Close()
	return mw.FormDataContentType(), b.Bytes()
}

// TestBodyMethodOverridesAreDecided: _method is honoured by frameworks in
// multipart forms (Rails, Laravel, Spring, gorilla), JSON bodies (Laravel,
// Phoenix, Express with a body getter) and a POST without a content type
// (Rack reads it as a form). A method the entry does not allow, named in
// any of them, is refused before anything is forwarded; bodies that name
// none (or an allowed one) pass, and a large upload to an entry that does
// not limit methods is never held to the override's peek limit.
func TestBodyMethodOverridesAreDecided(t *testing.T) {
	w := newWorld(t)
	big := bytes.Repeat([]byte("0123456789abcdef"), 200<<10/16)
	mpDelete, mpDeleteBody := multipartBody(t, [][2]string{{"name", "widget"}, {"_method", "DELETE"}}, nil)
	mpAfterFile, mpAfterFileBody := multipartBody(t, [][2]string{{"_method", "delete"}}, big)
	mpClean, mpCleanBody := multipartBody(t, [][2]string{{"name", "widget"}}, big)
	mpHuge, mpHugeBody := multipartBody(t, [][2]string{{"name", "widget"}}, bytes.Repeat(big, 12))
	tests := []struct {
		name   string
		host   string
		ct     string // "-": no Content-Type at all
		body   []byte
		status int
	}{
		{"multipart _method", "api.example.test", mpDelete, mpDeleteBody, http.StatusForbidden},
		{"multipart _method after a file", "api.example.test", mpAfterFile, mpAfterFileBody, http.StatusForbidden},
		{"json _method", "api.example.test", "application/json", []byte(`{"name":"widget","_method":"DELETE"}`), http.StatusForbidden},
		{"json+suffix _method", "api.example.test", "application/vnd.api+json; charset=utf-8", []byte(`{"_method":"put"}`), http.StatusForbidden},
		{"json duplicate key", "api.example.test", "application/json", []byte(`{"_method":"POST","_method":"DELETE"}`), http.StatusForbidden},
		{"no content type", "api.example.test", "-", []byte("name=widget&_method=DELETE"), http.StatusForbidden},
		{"php dot name", "api.example.test", "application/x-www-form-urlencoded", []byte(".method=DELETE"), http.StatusForbidden},
		{"php bracket name", "api.example.test", "application/x-www-form-urlencoded", []byte("[method=DELETE"), http.StatusForbidden},
		{"malformed content type", "api.example.test", "application/x-www-form-urlencoded;;=", []byte("_method=DELETE"), http.StatusForbidden},
		{"multipart clean", "api.example.test", mpClean, mpCleanBody, http.StatusOK},
		{"json clean", "api.example.test", "application/json", []byte(`{"name":"widget","nested":{"_method":"DELETE"}}`), http.StatusOK},
		{"json allowed method", "api.example.test", "application/json", []byte(`{"_method":"POST"}`), http.StatusOK},
		{"no content type clean", "api.example.test", "-", []byte("hello"), http.StatusOK},
		{"huge upload, methods unlimited", "other.example.test", mpHuge, mpHugeBody, http.StatusOK},
	}
	c := w.acme()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(w.up.requests())
			req, _ := http.NewRequest("POST", w.url(tt.host, "/v1/items"), bytes.NewReader(tt.body))
			if tt.ct != "-" {
				req.Header.Set("Content-Type", tt.ct)
			}
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d %q, want %d", resp.StatusCode, resp.Header.Get("Sluice-Reason"), tt.status)
			}
			got := len(w.up.requests()) - before
			if tt.status == http.StatusForbidden {
				if resp.Header.Get("Sluice-Reason") != "method-not-allowed" {
					t.Errorf("reason %q, want method-not-allowed", resp.Header.Get("Sluice-Reason"))
				}
				if got != 0 {
					t.Errorf("forwarded %d requests", got)
				}
				return
			}
			reqs := w.up.requests()
			if got != 1 || reqs[len(reqs)-1].ContentLength != int64(len(tt.body)) {
				t.Errorf("forwarded %d requests; the body did not arrive whole", got)
			}
		})
	}
}

// TestPathOverrideHeadersAreStripped: X-Original-URL and its kin make
// Symfony, IIS, Zend, Spring's ForwardedHeaderFilter and forward-auth
// setups route or authorise on a path the policy never saw: they never
// reach the upstream.
func TestPathOverrideHeadersAreStripped(t *testing.T) {
	w := newWorld(t)
	headers := []string{"X-Original-URL", "X-Rewrite-URL", "X-Original-URI", "X-Forwarded-Uri",
		"X-Forwarded-Prefix", "X-Forwarded-Path", "X-Forwarded-Host", "X-Host", "X-Forwarded-Server", "Forwarded"}
	req, _ := http.NewRequest("GET", w.url("api.example.test", "/v1/x"), nil)
	for _, h := range headers {
		req.Header.Set(h, "/admin")
	}
	resp, err := w.acme().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d %s", resp.StatusCode, resp.Header.Get("Sluice-Reason"))
	}
	reqs := w.up.requests()
	for _, h := range headers {
		if v := reqs[len(reqs)-1].Header.Values(h); len(v) > 0 {
			t.Errorf("%s reached the upstream: %q", h, strings.Join(v, ", "))
		}
	}
}
