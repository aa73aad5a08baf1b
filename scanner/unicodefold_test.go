package scanner

import (
	"context"
	"math/rand/v2"
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

// foldLead has, for each rune foldOf folds, the class of what it is at its
// first byte; no byte of ASCII; and a Cyrillic or Greek lead byte that
// only lookalikes start is started by no rune with another fold (the
// layer passes over those letters when they are not beside a token).
// nfkcASCIILead is exactly the first bytes of the runes NFKC folds.
func TestFoldLead(t *testing.T) {
	classOf := map[foldKind]uint8{foldDrop: foldsInvisible, foldSpell: foldsInvisible, foldMark: foldsMark, foldLookalike: foldsLookalike,
		foldCompat: foldsNFKC, foldCompatMulti: foldsNFKC, foldPunct: foldsNFKC, foldAccent: foldsNFKC}
	var nfkc [256]bool
	for r := rune(utf8.RuneSelf); r <= unicode.MaxRune; r++ {
		f := foldOf(r)
		if f.kind == foldKeep {
			continue
		}
		var b [utf8.UTFMax]byte
		utf8.EncodeRune(b[:], r)
		if foldLead[b[0]]&classOf[f.kind] == 0 {
			t.Fatalf("U+%04X (fold %d): its first byte %#x has class %#x in foldLead", r, f.kind, b[0], foldLead[b[0]])
		}
		if foldLead[b[0]] == foldsLookalike && f.kind != foldLookalike {
			t.Fatalf("U+%04X (fold %d): its first byte %#x is a lookalike's alone", r, f.kind, b[0])
		}
		if classOf[f.kind] == foldsNFKC {
			nfkc[b[0]] = true
		}
		if r < 0x10000 && bmpFolds()[r] != f {
			t.Fatalf("U+%04X: bmpFolds has %v, foldOf %v", r, bmpFolds()[r], f)
		}
		if i := quietUntil("x"+string(r), 0, &foldLeads[leadLookalikes|leadLatinNFKC], bmpFolds()); i != 1 {
			t.Fatalf("U+%04X (fold %d): quietUntil passed over it", r, f.kind)
		}
	}
	var want []byte
	for c, ok := range nfkc {
		if ok {
			want = append(want, byte(c))
		}
	}
	if string(want) != nfkcASCIILead {
		t.Errorf("nfkcASCIILead = %q, want %q", nfkcASCIILead, want)
	}
	for c := range utf8.RuneSelf {
		if foldLead[c] != 0 {
			t.Fatalf("ASCII byte %#x in foldLead", c)
		}
	}
}

func TestFoldUnicode(t *testing.T) {
	for in, want := range map[string]string{
		"a\u200bb\u200cc\u200dd\u2060e\ufefff\u00adg": "abcdefg",
		"x" + tagged("hi there") + "y":                "xhi therey",
		selected("hidden"):                            "😀hidden",
		"👨\u200d👩\u200d👧 family":                      "👨👩👧 family",
		"\u202eevil\u202c":                            "evil",
		"ｇｈｐ＿Ａ１":                                      "ghp_A1",
		"𝐠𝐡𝐩_𝐀𝟏 𝘨𝘩𝘱 ⓖⓗⓟ":                              "ghp_A1 ghp ghp",
		"g\u0301h\u0302\u0303p_":                      "ghp_",
		"ghр_аbс Сергей":                              "ghp_abc Сергей",
		"ﬁle, x², Tｅst":                               "file, x2, Test",
		"café naïve ab3défg":                          "café naïve ab3defg",
		"key：ｖａｌｕｅ，":                                  "key:value,",
	} {
		if got, ok := foldUnicodeLines(in, true); !ok || got != want {
			t.Errorf("foldUnicodeLines(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	for _, in := range []string{"plain ascii", "東京, emoji 😀", "Привет, мир! Это тест.", "你好，世界：今天", "Καλημέρα κόσμε", "café, naïve, Straße, élève", "नमस्ते दुनिया", "a\u00a0b…", ""} {
		if got, ok := foldUnicodeLines(in, true); ok {
			t.Errorf("foldUnicodeLines(%q) = %q: nothing is hidden there", in, got)
		}
	}
}

// Only the lines that hold an invisible character make the layer.
func TestFoldUnicodeLines(t *testing.T) {
	in := "first line\nsecond \u200bline\nthird line\nfourth" + tagged(" tag") + "\nlast"
	if got, ok := foldUnicodeLines(in, true); !ok || got != "second line\nfourth tag\n" {
		t.Errorf("foldUnicodeLines = %q, %v", got, ok)
	}
	if got, ok := foldUnicodeLines("one \u2060line", true); !ok || got != "one line" {
		t.Errorf("one line: %q, %v", got, ok)
	}
	if _, ok := foldUnicodeLines("nothing\nhidden 😀\n", true); ok {
		t.Error("a text with nothing hidden made a layer")
	}
}

// A token with an invisible character between every few of its own,
// spelled in characters that do not show or in letters that look like its
// own, is found; text in other scripts and emoji is not a finding.
func TestUnicodeHidesNoToken(t *testing.T) {
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
		return scanTyped(t, s, "application/json", `{"messages":[{"role":"user","content":"here it is: `+text+` thanks"}]}`)
	}
	for name, text := range map[string]string{
		"zero-width space": split("\u200b"), "zero-width joiner": split("\u200d"), "word joiner": split("\u2060"),
		"byte order mark": split("\ufeff"), "soft hyphen": split("\u00ad"), "bidi override": split("\u202d"),
		"tag characters": tagged(tok), "variation selectors": selected(tok),
		"fullwidth": mapRunes(tok, func(r rune) rune { return r - '!' + '！' }),
		"mathematical bold": mapRunes(tok, func(r rune) rune {
			switch {
			case r >= 'a' && r <= 'z':
				return r - 'a' + '𝐚'
			case r >= 'A' && r <= 'Z':
				return r - 'A' + '𝐀'
			case r >= '0' && r <= '9':
				return r - '0' + '𝟎'
			}
			return r
		}),
		"combining marks":                       strings.Join(strings.Split(tok, ""), "\u0301"),
		"Cyrillic lookalikes":                   strings.NewReplacer("a", "а", "c", "с", "e", "е", "o", "о", "p", "р", "x", "х").Replace(tok),
		"IPA, Armenian and Cherokee lookalikes": strings.NewReplacer("g", "ɡ", "o", "օ", "u", "ս", "A", "Ꭺ", "T", "Ꭲ").Replace(tok),
		"accents":                               strings.NewReplacer("h", "ĥ", "a", "á", "e", "è", "o", "ö", "u", "ü", "n", "ñ").Replace(tok), // ĥ: the prefix always changes
	} {
		res := scan(text)
		found := false
		for _, f := range res.Findings {
			found = found || string(f.secret) == tok && f.Decoding == encUnicode
		}
		if res.Verdict != Block || !found {
			t.Errorf("%s: verdict %v, want block with the token decoded as %q:%s", name, res.Verdict, encUnicode, dump(res.Findings))
		}
	}
	if res := scan("会議は明日の午後です 👩\u200d💻 see you ❤️ Привет, мир café ｐｌｅａｓｅ Բարեւ աշխարհ ᏣᎳᎩ ɑɡ"); res.Verdict != Pass {
		t.Errorf("text in other scripts and emoji: verdict %v:%s", res.Verdict, dump(res.Findings))
	}
}

// mapRunes is s with each rune r as f(r).
func mapRunes(s string, f func(rune) rune) string {
	var b strings.Builder
	for _, r := range s {
		b.WriteRune(f(r))
	}
	return b.String()
}

// BenchmarkScanProse is the scan of a MiB of prose in four languages, as
// text/plain: what the unicode layer costs where it has nothing to find
// (English is ASCII and pays nothing; French folds every line with an
// accent; Russian and Chinese are read rune by rune and fold nothing).
func BenchmarkScanProse(b *testing.B) {
	s := testScanner(b)
	s.MaxBodyBytes = 64 << 20
	s.CleanCacheEntries = -1
	for _, lang := range []struct{ name, words string }{
		{"en", "the agent reads the file and writes a patch for the failing test then runs the linter and reports back"},
		{"fr", "l'agent lit le fichier écrit un correctif pour le test qui échoue puis lance la vérification et résume les changements déjà faits"},
		{"ru", "агент читает файл пишет исправление для упавшего теста затем запускает проверку и сообщает о результатах"},
		{"zh", "代理 读取 文件，编写 补丁 修复 失败的 测试，然后 运行 检查 并 报告 结果。"},
	} {
		words := strings.Fields(lang.words)
		r := rand.New(rand.NewPCG(7, 8))
		var sb strings.Builder
		for sb.Len() < 1<<20 {
			sb.WriteString(words[r.IntN(len(words))])
			if r.IntN(14) == 0 {
				sb.WriteString(".\n")
			} else {
				sb.WriteByte(' ')
			}
		}
		body := sb.String()
		b.Run(lang.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				res, err := s.Scan(context.Background(), &Request{Header: http.Header{"Content-Type": {"text/plain"}}, Body: strings.NewReader(body)})
				if err != nil {
					b.Fatal(err)
				}
				if res.Verdict != Pass {
					b.Fatalf("verdict %v:%s", res.Verdict, dump(res.Findings))
				}
				res.Release()
			}
		})
	}
}

// hasDigit finds a digit at every place of its eight-byte words, beside
// every byte value.
func TestHasDigit(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		b := make([]byte, r.IntN(24))
		for i := range b {
			b[i] = byte(r.IntN(256))
			if b[i] >= '0' && b[i] <= '9' && r.IntN(4) > 0 {
				b[i] = '/' + byte(r.IntN(2))*11 // '/' or ':', beside the digits
			}
		}
		if got, want := hasDigit(string(b)), strings.ContainsAny(string(b), "0123456789"); got != want {
			t.Fatalf("hasDigit(%q) = %v, want %v", b, got, want)
		}
	}
}
