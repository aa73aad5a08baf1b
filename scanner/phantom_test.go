package scanner

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// phantoms is a PhantomSet, and a CanarySet, of fixed values; the tests
// may change them between scans, as a store learns of new ones.
type phantoms struct {
	key  []byte
	vals map[string]string // value -> name (or canary id)
}

func (p phantoms) Phantom(fp string) (string, bool) {
	for v, n := range p.vals {
		if fingerprint(p.key, v) == fp {
			return n, true
		}
	}
	return "", false
}

func (p phantoms) Canary(fp string) (string, bool) { return p.Phantom(fp) }

func (p phantoms) Lengths() map[int]bool {
	m := map[int]bool{}
	for v := range p.vals {
		m[len(v)] = true
	}
	return m
}

func TestPhantomMisuse(t *testing.T) {
	key := []byte("k")
	ph, _ := FakeSecret("github-pat")
	s := &Scanner{Key: key, Phantoms: phantoms{key: key, vals: map[string]string{ph: "github"}}}
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+ph))
	inPlace := func(fp, where, decoding string) bool {
		return fp == fingerprint(key, ph) && where == "header:Authorization" && decoding == "base64"
	}
	for _, tc := range []struct {
		name    string
		header  http.Header
		url     string
		body    string
		allowed func(fp, where, decoding string) bool
		want    string // the finding's where, "" for none
	}{
		{"in its place", http.Header{"Authorization": {basic}}, "/", "", inPlace, ""},
		{"in place, no allowance (another host)", http.Header{"Authorization": {basic}}, "/", "", nil, "header:Authorization"},
		{"as bearer where basic belongs", http.Header{"Authorization": {"Bearer " + ph}}, "/", "", inPlace, "header:Authorization"},
		{"in the body", http.Header{"Authorization": {basic}}, "/", `{"t":"` + ph + `"}`, inPlace, "json:$.t"},
		{"base64 in the body", nil, "/", base64.StdEncoding.EncodeToString([]byte("tok " + ph)), inPlace, "body"},
		{"in the query", nil, "/?q=" + ph, "", inPlace, "url"},
		// Joined with the header beside it (fieldjoin.go), the phantom is
		// still only in its place.
		{"in its header beside others", http.Header{"Private-Token": {ph}, "X-Request-Id": {"a1b2c3d4"}}, "/", "",
			func(fp, where, decoding string) bool {
				return fp == fingerprint(key, ph) && where == "header:Private-Token" && decoding == ""
			}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, _ := url.Parse(tc.url)
			h := tc.header
			if h == nil {
				h = http.Header{}
			}
			req := &Request{Host: "github.test", URL: u, Header: h, PhantomAllowed: tc.allowed}
			if tc.body != "" {
				req.Body = strings.NewReader(tc.body)
				if strings.HasPrefix(tc.body, "{") {
					h.Set("Content-Type", "application/json")
				}
			}
			res, err := s.Scan(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == "" {
				if len(res.Findings) != 0 || res.Verdict != Pass {
					t.Fatalf("findings %v", res.Findings)
				}
				return
			}
			if res.Verdict != Block || res.Reason != "phantom-misuse" {
				t.Fatalf("verdict %v %q, findings %v", res.Verdict, res.Reason, res.Findings)
			}
			for _, f := range res.Findings {
				if f.Kind == KindSecret {
					t.Errorf("the phantom was also reported as a secret: %v", f)
				}
				if strings.Contains(f.Snippet, ph) || strings.Contains(f.String(), ph) {
					t.Error("finding shows the phantom")
				}
			}
			if f := res.Findings[0]; f.Kind != KindPhantom || f.Rule != "phantom-misuse:github" || f.Where != tc.want {
				t.Errorf("finding %v, want where %s", f, tc.want)
			}
		})
	}
}
