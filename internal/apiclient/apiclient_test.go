package apiclient

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

func TestDo(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer acme:tok" {
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"error": "who are you"}`)
			return
		}
		if r.URL.Path == "/api/broken" {
			w.WriteHeader(http.StatusBadGateway)
			io.WriteString(w, "<html>")
			return
		}
		b, _ := io.ReadAll(r.Body)
		io.WriteString(w, `{"method": "`+r.Method+`", "type": "`+r.Header.Get("Content-Type")+`", "body": `+string(b)+`}`)
	}))
	defer srv.Close()
	// A proxy in the env must not see the admin credentials.
	t.Setenv("HTTP_PROXY", "http://127.0.0.1:1")
	base, _ := url.Parse(srv.URL)
	c := &Client{Base: base, Auth: func(r *http.Request) { r.Header.Set("Authorization", "Bearer acme:tok") }}
	var got struct {
		Method, Type string
		Body         map[string]string
	}
	if err := c.Do(context.Background(), http.MethodPost, "/api/runs", map[string]string{"tenant": "acme"}, &got); err != nil {
		t.Fatal(err)
	}
	if got.Method != "POST" || got.Type != "application/json" || got.Body["tenant"] != "acme" {
		t.Fatalf("got %+v", got)
	}
	if err := c.Do(context.Background(), http.MethodGet, "/api/broken", nil, nil); err == nil || !strings.Contains(err.Error(), "502") {
		t.Errorf("err = %v, want the status", err)
	}
	c.Auth = nil
	if err := c.Do(context.Background(), http.MethodGet, "/api/runs", nil, nil); err == nil || err.Error() != "admin API: who are you (401)" {
		t.Errorf("err = %v, want the API's message", err)
	}
}
