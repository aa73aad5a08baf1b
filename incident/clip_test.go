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

// Token shapes that are all one alphabet (hex, digits) or wrapped in
// punctuation are redacted as well: a UUID, a 40-hex token, a card number,
// a token with a file extension or a key=value around it.
func TestRedactPathHidesTokenShapes(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"uuid", "/api/keys/550e8400-e29b-41d4-a716-446655440000", "/api/keys/{redacted}"},
		{"upper uuid", "/k/550E8400-E29B-41D4-A716-446655440000/x", "/k/{redacted}/x"},
		{"40 hex", "/t/da39a3ee5e6b4b0d3255bfef95601890afd80709", "/t/{redacted}"},
		{"32 hex with extension", "/hook/0cc175b9c0f1b6a831c399e269772661.json", "/hook/{redacted}"},
		{"16 digits", "/pay/4111111111111111", "/pay/{redacted}"},
		{"key=value", "/x/token=k9XqT2mZ7vLp4RwA8sJd", "/x/{redacted}"},
		{"userinfo", "/u/bob:k9XqT2mZ7vLp4RwA8sJd@x", "/u/{redacted}"},
		{"short hex id", "/commits/abc1234", "/commits/abc1234"},
		{"date", "/archive/2024-01-31", "/archive/2024-01-31"},
		{"word with extension", "/static/application.min.js", "/static/application.min.js"},
		{"version", "/v1.2.3-beta.4/index.html", "/v1.2.3-beta.4/index.html"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := RedactPath(tc.in); got != tc.want {
				t.Fatalf("RedactPath(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// RedactHost keeps a host's shape (the domain it aimed at is evidence) and
// replaces labels that look like data, whether or not the host is valid.
func TestRedactHost(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plain", "api.example.test", "api.example.test"},
		{"token label", "k9XqT2mZ7vLp4RwA8sJd.attacker.test", "{redacted}.attacker.test"},
		{"uuid label", "550e8400-e29b-41d4-a716-446655440000.attacker.test", "{redacted}.attacker.test"},
		{"ip", "198.51.100.7", "198.51.100.7"},
		{"v6", "2001:db8::1", "2001:db8::1"},
		{"bad host with userinfo", "bob:k9XqT2mZ7vLp4RwA8sJd@evil.test", "{redacted}.test"},
		{"bad host with spaces", "token k9XqT2mZ7vLp4RwA8sJd", "{redacted}"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := RedactHost(tc.in); got != tc.want {
				t.Fatalf("RedactHost(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
	if got := RedactHost(strings.Repeat("a.", 300)); len(got) > MaxShort {
		t.Fatalf("long host kept %d bytes", len(got))
	}
}
