package scanner

import (
	"strings"
	"testing"
)

// A token cut into literals that code joins is found in the joined
// literals, wherever the cut falls after its prefix, and, after a name
// that says what it is, inside the prefix too.
func TestJoinedLiteralsHideNoToken(t *testing.T) {
	s := testScanner(t)
	tok := MustFake(t, "github-pat")
	ways := map[string]func(a, b, c string) string{
		"JavaScript": func(a, b, c string) string { return `const t = "` + a + `" + "` + b + `" + "` + c + `";` },
		"Python": func(a, b, c string) string {
			return "t = (\n    \"" + a + "\"\n    \"" + b + "\"\n    \"" + c + "\"\n)\n"
		},
		"PHP":   func(a, b, c string) string { return `$t = '` + a + `' . '` + b + `' . '` + c + `';` },
		"SQL":   func(a, b, c string) string { return `SELECT '` + a + `' || '` + b + `' || '` + c + `';` },
		"shell": func(a, b, c string) string { return `curl -H "x: ` + a + `""` + b + `"'` + c + `'` },
		"C":     func(a, b, c string) string { return "char *t = \"" + a + "\" \\\n  \"" + b + "\" \"" + c + "\";" },
	}
	for name, way := range ways {
		for _, cut := range []int{4, 9, 20} {
			text := way(tok[:cut], tok[cut:30], tok[30:])
			for _, tc := range []struct{ ct, body string }{
				{"text/plain", text},
				{"application/json", `{"messages":[{"role":"user","content":` + jsonQuote(text) + `}]}`},
			} {
				res := scanTyped(t, s, tc.ct, tc.body)
				found := false
				for _, f := range res.Findings {
					found = found || string(f.secret) == tok && strings.HasSuffix(f.Decoding, encJoined)
				}
				if res.Verdict != Block || !found {
					t.Errorf("%s, cut at %d, %s: verdict %v, want block with the token in the joined literals:%s", name, cut, tc.ct, res.Verdict, dump(res.Findings))
				}
			}
		}
	}
	// Cut inside the prefix: found after a name that says what it holds.
	if res := scanTyped(t, s, "text/plain", `token = "`+tok[:2]+`" + "`+tok[2:]+`"`); res.Verdict != Block {
		t.Errorf("cut in the prefix after a name: verdict %v:%s", res.Verdict, dump(res.Findings))
	}
	for _, benign := range []string{
		`msg := "Hello, " + name + "! Your token " + "expires soon"`,
		`It's the user's token, isn't it? 'a' + 'b'`,
		`key = "config" + "." + "yaml"; secret = "` + strings.Repeat("x", 8) + `" + "` + strings.Repeat("y", 8) + `"`,
	} {
		if res := scanTyped(t, s, "text/plain", benign); res.Verdict != Pass {
			t.Errorf("%q: verdict %v:%s", benign, res.Verdict, dump(res.Findings))
		}
	}
}

func jsonQuote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}

func TestJoinedLiterals(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`a = "ab" + "cd" + 'ef'; b = "x"`, "abcdef\n"},
		{"(\"ab\"\n \"cd\")", "abcd\n"},
		{`"ab" . "cd" || 'ef' .. "gh"`, "abcdefgh\n"},
		{`"a\"b" + "c"`, `a\"bc` + "\n"},
		{`"ab", "cd"`, ""},      // arguments, not joined
		{`"ab" + x + "cd"`, ""}, // a variable between
		{`it's a 'word' isn't it`, ""},
	} {
		got, ok := joinedLiterals(tc.in)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("%q: got %q (%v), want %q", tc.in, got, ok, tc.want)
		}
	}
}

// FuzzJoinedLiterals: any text is read without a panic, the joined
// literals are never longer than the text, and every keyword end is asked.
func FuzzJoinedLiterals(f *testing.F) {
	f.Add(`const t = "ghp_" + "abc" + 'def'; x = "a\"b" "c"`)
	f.Add("token = (\"a\"\n \"b\") ` + `")
	f.Add(`"`)
	f.Fuzz(func(t *testing.T, s string) {
		if j, ok := joinedLiterals(s); ok && len(j) > len(s) {
			t.Fatalf("%d bytes from a text of %d", len(j), len(s))
		}
		for end := range len(s) + 1 {
			quotedBeforeJoin(s, end)
		}
	})
}
