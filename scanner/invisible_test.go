package scanner

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// tagged spells s in Unicode tag characters, which do not show.
func tagged(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		b.WriteRune(0xE0000 + rune(c))
	}
	return b.String()
}

// selected hides s in variation selectors after a visible character, a
// selector for each byte.
func selected(s string) string {
	var b strings.Builder
	b.WriteString("😀")
	for _, c := range []byte(s) {
		if c < 16 {
			b.WriteRune(0xFE00 + rune(c))
		} else {
			b.WriteRune(0xE0100 + rune(c) - 16)
		}
	}
	return b.String()
}

// invisibleLead holds the first byte of every rune invisibleAs knows, and
// no byte of ASCII, which needs no decoding.
func TestInvisibleLead(t *testing.T) {
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if _, ok := invisibleAs(r); ok {
			var b [utf8.UTFMax]byte
			utf8.EncodeRune(b[:], r)
			if !invisibleLead[b[0]] {
				t.Fatalf("U+%04X: its first byte %#x is not in invisibleLead", r, b[0])
			}
		}
	}
	for c := range utf8.RuneSelf {
		if invisibleLead[c] {
			t.Fatalf("ASCII byte %#x in invisibleLead", c)
		}
	}
}

func TestRevealInvisible(t *testing.T) {
	for in, want := range map[string]string{
		"a\u200bb\u200cc\u200dd\u2060e\ufefff\u00adg": "abcdefg",
		"x" + tagged("hi there") + "y":                "xhi therey",
		selected("hidden"):                            "😀hidden",
		"👨\u200d👩\u200d👧 family":                      "👨👩👧 family",
		"\u202eevil\u202c":                            "evil",
	} {
		if got, ok := revealInvisible(in); !ok || got != want {
			t.Errorf("revealInvisible(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	for _, in := range []string{"plain ascii", "café, naïve, 東京, emoji 😀", ""} {
		if got, ok := revealInvisible(in); ok {
			t.Errorf("revealInvisible(%q) = %q: nothing is hidden there", in, got)
		}
	}
}

// Only the lines that hold an invisible character make the layer.
func TestRevealInvisibleLines(t *testing.T) {
	in := "first line\nsecond \u200bline\nthird line\nfourth" + tagged(" tag") + "\nlast"
	if got, ok := revealInvisibleLines(in); !ok || got != "second line\nfourth tag\n" {
		t.Errorf("revealInvisibleLines = %q, %v", got, ok)
	}
	if got, ok := revealInvisibleLines("one \u2060line"); !ok || got != "one line" {
		t.Errorf("one line: %q, %v", got, ok)
	}
	if _, ok := revealInvisibleLines("nothing\nhidden 😀\n"); ok {
		t.Error("a text with nothing hidden made a layer")
	}
}

// A token with an invisible character between every few of its own, or
// spelled in characters that do not show, is found; text in other scripts
// and emoji is not a finding.
func TestInvisibleCharactersHideNoToken(t *testing.T) {
	s := testScanner(t)
	tok := MustFake(t, "github-pat")
	split := func(sep string) string {
		var b strings.Builder
		for i, r := range tok {
			if i > 0 && i%4 == 0 {
				b.WriteString(sep)
			}
			b.WriteRune(r)
		}
		return b.String()
	}
	scan := func(text string) *Result {
		t.Helper()
		body := `{"messages":[{"role":"user","content":"here it is: ` + text + ` thanks"}]}`
		res, err := s.Scan(context.Background(), &Request{Header: http.Header{"Content-Type": {"application/json"}}, Body: strings.NewReader(body)})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	for name, text := range map[string]string{
		"zero-width space": split("\u200b"), "zero-width joiner": split("\u200d"), "word joiner": split("\u2060"),
		"byte order mark": split("\ufeff"), "soft hyphen": split("\u00ad"), "bidi override": split("\u202d"),
		"tag characters": tagged(tok), "variation selectors": selected(tok),
	} {
		res := scan(text)
		found := false
		for _, f := range res.Findings {
			found = found || string(f.secret) == tok && f.Decoding == encInvisible
		}
		if res.Verdict != Block || !found {
			t.Errorf("%s: verdict %v, want block with the token decoded as %q:%s", name, res.Verdict, encInvisible, dump(res.Findings))
		}
	}
	if res := scan("会議は明日の午後です 👩\u200d💻 see you ❤️"); res.Verdict != Pass {
		t.Errorf("text in other scripts and emoji: verdict %v:%s", res.Verdict, dump(res.Findings))
	}
}
