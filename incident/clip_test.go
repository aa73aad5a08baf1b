package incident

import (
	"encoding/json"
	mathrand "math/rand/v2"
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
		{"token without a digit", "/repos/ghp_ffmodozoEBGHXMHctaKgZktUafVdmIfiLzTq/x", "/repos/{redacted}/x"},
		{"key id without a digit", "/k/AKIAQWERTYUIOPASDFGH", "/k/{redacted}"},
		{"camel case name", "/api/GetUserProfileSettings", "/api/GetUserProfileSettings"},
		{"lower case slug", "/docs/gettingstartedwithgit", "/docs/gettingstartedwithgit"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := RedactPath(tc.in); got != tc.want {
				t.Fatalf("RedactPath(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// TestRedactPathHidesRandomTokens draws tokens the way a secret generator
// does. A token with a digit is always redacted; one of letters alone only
// when neither case is rare in it, which a random draw misses about once
// in 850 at 36 letters and once in 85 at 20 (both cases at least a quarter
// of the letters). The rules find the known formats among those
// (Gateway.evidencePath); this bounds what the shapes alone let through.
func TestRedactPathHidesRandomTokens(t *testing.T) {
	const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	rng := mathrand.New(mathrand.NewPCG(1, 2))
	draw := func(prefix, alphabet string, n int) string {
		b := []byte(prefix)
		for range n {
			b = append(b, alphabet[rng.IntN(len(alphabet))])
		}
		return string(b)
	}
	withDigit := func(tok string) bool { return strings.ContainsAny(tok, "0123456789") }
	shapes := []struct {
		name    string
		draw    func() string
		maxMiss float64 // share of draws that may keep their token
	}{
		{"github token", func() string { return draw("ghp_", alnum, 36) }, 0.005},
		{"github token, no digit", func() string { return draw("ghp_", alnum[:52], 36) }, 0.005},
		{"20 letters", func() string { return draw("", alnum[:52], 20) }, 0.03},
		{"aws key id", func() string { return draw("AKIA", "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16) }, 0},
		{"aws key id, no digit", func() string { return draw("AKIA", alnum[:26], 16) }, 0},
	}
	const draws = 5000
	for _, sh := range shapes {
		missed := 0
		for range draws {
			tok := sh.draw()
			if got := RedactPath("/x/" + tok + "/y"); got != "/x/{redacted}/y" {
				if withDigit(tok) {
					t.Fatalf("%s: RedactPath kept a token with a digit: %q", sh.name, got)
				}
				missed++
			}
		}
		if share := float64(missed) / draws; share > sh.maxMiss {
			t.Errorf("%s: %d of %d draws kept (%.2f%%), want at most %.2f%%", sh.name, missed, draws, 100*share, 100*sh.maxMiss)
		}
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

func TestRedactHostLabels(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"a.b.evil.test", 2, "{redacted}.evil.test"},
		{"a.evil.test", 1, "{redacted}.evil.test"},
		{"evil.test", 1, "{redacted}.test"},
		{"evil.test", 2, "evil.test"},
		{"k9XqT2mZ7vLp4RwA8sJd.evil.test", 0, "{redacted}.evil.test"},
	} {
		if got := RedactHostLabels(tc.in, tc.n); got != tc.want {
			t.Errorf("RedactHostLabels(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}
