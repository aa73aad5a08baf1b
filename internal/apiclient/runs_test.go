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

func TestRuns(t *testing.T) {
	var ended string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/api/runs":
			io.WriteString(w, `{"id": "run_1", "tenant": "acme", "env": ["HTTPS_PROXY=x"], "extra": true}`)
		case r.Method == http.MethodDelete && strings.HasPrefix(r.URL.Path, "/api/runs/"):
			ended = r.URL.EscapedPath()
			w.WriteHeader(http.StatusNoContent)
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	defer srv.Close()
	base, _ := url.Parse(srv.URL)
	c := &Client{Base: base}
	rc, raw, err := c.CreateRun(context.Background(), map[string]string{"tenant": "acme"})
	if err != nil {
		t.Fatal(err)
	}
	if rc.ID != "run_1" || rc.Tenant != "acme" || len(rc.Env) != 1 || !strings.Contains(string(raw), `"extra"`) {
		t.Fatalf("CreateRun = %+v, %s", rc, raw)
	}
	if err := c.EndRun(context.Background(), "run_1/.."); err != nil {
		t.Fatal(err)
	}
	if ended != "/api/runs/run_1%2F.." {
		t.Fatalf("EndRun sent %q: the id is not escaped", ended)
	}
	if _, _, err := (&Client{Base: base.JoinPath("nowhere")}).CreateRun(context.Background(), nil); err == nil {
		t.Fatal("a 404 is no error")
	}
}
