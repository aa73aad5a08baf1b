package incident

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestBounded(t *testing.T) {
	in := Incident{
		Time: time.Unix(1, 0), Tenant: "acme", Class: "agent", Run: "run_1", Kind: "deny", Reason: "host-not-allowed",
		Action: "block", Host: "evil.example.test", Port: 443, Method: "GET", Path: "/a?token=abc#frag",
		Client: "10.0.0.1:1234", Rule: strings.Repeat("r", 300), Snippet: strings.Repeat("é", 1000),
	}
	got := in.Bounded()
	if got.Path != "/a" {
		t.Errorf("path %q: the query string must never be stored", got.Path)
	}
	if len(got.Snippet) > MaxSnippet || !utf8.ValidString(got.Snippet) || !strings.HasSuffix(got.Snippet, "…") {
		t.Errorf("snippet of %d bytes, valid UTF-8 %v", len(got.Snippet), utf8.ValidString(got.Snippet))
	}
	if len(got.Rule) > MaxShort || !strings.HasSuffix(got.Rule, "…") {
		t.Errorf("rule of %d bytes not clipped", len(got.Rule))
	}
	if got.Tenant != "acme" || got.Host != in.Host || got.Port != 443 || got.Reason != in.Reason || got.Client != in.Client {
		t.Errorf("fields lost: %+v", got)
	}
	if long := (Incident{Path: "/" + strings.Repeat("p", 3000)}).Bounded(); len(long.Path) > MaxPath {
		t.Errorf("path of %d bytes kept", len(long.Path))
	}
}

func TestClip(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{{"abc", 3, "abc"}, {"abcdef", 5, "ab…"}, {"ééé", 6, "ééé"}, {"éééé", 7, "éé…"}, {"éééé", 6, "é…"}, {"abcdef", 2, "…"}} {
		if got := Clip(tc.s, tc.n); got != tc.want || (len(got) > tc.n && tc.n >= len("…")) {
			t.Errorf("Clip(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}

func TestRedactPathHidesDataSegments(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plain", "/v1/chat/completions", "/v1/chat/completions"},
		{"version and ids", "/repos/acme/widget/pulls/1234", "/repos/acme/widget/pulls/1234"},
		{"token segment", "/hooks/k9XqT2mZ7vLp4RwA8sJd/send", "/hooks/{redacted}/send"},
		{"long segment", "/x/" + strings.Repeat("y", 41), "/x/{redacted}"},
		{"long word", "/documentation-for-things", "/documentation-for-things"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := RedactPath(tc.in); got != tc.want {
				t.Fatalf("RedactPath(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
	if got := RedactPath("/" + strings.Repeat("ab/", 200)); len(got) > maxRedactedPath+len("…") {
		t.Fatalf("long path kept %d bytes", len(got))
	}
}

// TestJSONShape pins the field names the API (docs/api.md) shows.
func TestJSONShape(t *testing.T) {
	b, err := json.Marshal(Incident{ID: "inc_1", Time: time.Unix(0, 0).UTC(), Tenant: "acme", Kind: "deny",
		Reason: "host-not-allowed", Action: "block", Host: "x.example.test", Triage: Triage{State: TriageNew}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"inc_1","time":"1970-01-01T00:00:00Z","tenant":"acme","kind":"deny","reason":"host-not-allowed",` +
		`"action":"block","host":"x.example.test","triage":{"state":"new"}}`
	if string(b) != want {
		t.Fatalf("JSON\n%s\nwant\n%s", b, want)
	}
}
