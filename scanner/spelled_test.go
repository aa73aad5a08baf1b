package scanner

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
)

func TestSpelledRuns(t *testing.T) {
	word := "AbCdEfGh_1234-xyzQ"
	for in, want := range map[string]string{
		"k: " + strings.Join(strings.Split(word, ""), " ") + " end": "k: " + word + "\n",
		strings.Join(strings.Split(word, ""), "-"):                  word + "\n",
		`["` + strings.Join(strings.Split(word, ""), `", "`) + `"]`: `["` + word + "\n",
		strings.Join(strings.Split(word, ""), "\n"):                 word + "\n",
	} {
		if got, ok := spelledRuns(in); !ok || got != want {
			t.Errorf("spelledRuns(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	for _, in := range []string{
		"I saw a cat, a dog and a bird; x y z.",
		"for i := 0; i < n; i++ { a[i] = f(a, b, c, d, e) }",
		"[0,1,0,0,1,1,0,1,0,0,1,0,1,1,1,0,0,1]",               // digits alone: a data array
		strings.Join(strings.Split("AbCdEfGh_1234", ""), " "), // shorter than minSpelled
	} {
		if got, ok := spelledRuns(in); ok {
			t.Errorf("spelledRuns(%q) = %q: nothing is spelled there", in, got)
		}
	}
}

func TestBinaryAndOctalRuns(t *testing.T) {
	word := "AbCdEfGh_1234-xyzQ"
	each := func(format, sep string) string {
		var parts []string
		for _, c := range []byte(word) {
			parts = append(parts, fmt.Sprintf(format, c))
		}
		return strings.Join(parts, sep)
	}
	for in, want := range map[string]string{
		"bits " + each("%08b", " "):                             "bits " + word + "\n",
		"bits " + each("%08b", ""):                              "bits " + word + "\n",
		"[" + each("0b%b", ", ") + "]":                          "[" + word + "\n",
		"x=" + each("%b", ",") + ";":                            "x=" + word + "\n",
		"x " + each("%08b", "") + "0000000":                     "", // not whole characters
		"x " + each("%08b", " ") + " 11":                        "x " + word + "\n",
		"f " + each("%08b", "") + "00001010" + each("%08b", ""): "f " + word + "\n" + word + "\n", // a line break in it
		each("%08b", "")[1:]:                                    "",                               // its first bit cut off
	} {
		got, ok := binaryRuns(in)
		if got != want || ok != (want != "") {
			t.Errorf("binaryRuns(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	if got, ok := octalCodeRuns("od: " + each("%03o", " ")); !ok || got != "od: "+word+"\n" {
		t.Errorf("octalCodeRuns = %q, %v", got, ok)
	}
	for _, in := range []string{
		each("%03o", " ")[4*4:] + " 9",   // shorter than minSpelled
		strings.Repeat("777 ", 20),       // out of range
		strings.Repeat("0755 0644 ", 10), // four digits
	} {
		if got, ok := octalCodeRuns(in); ok {
			t.Errorf("octalCodeRuns(%q) = %q: no text is there", in, got)
		}
	}
}

func TestCharCodeRuns(t *testing.T) {
	codes := func(s, sep string) string {
		var parts []string
		for _, c := range []byte(s) {
			parts = append(parts, fmt.Sprint(c))
		}
		return strings.Join(parts, sep)
	}
	word := "AbCdEfGh_1234-xyzQ"
	for in, want := range map[string]string{
		"String.fromCharCode(" + codes(word, ",") + ")": "String.fromCharCode(" + word + "\n",
		"[" + codes(word, ", ") + "]":                   "[" + word + "\n",
	} {
		if got, ok := charCodeRuns(in); !ok || got != want {
			t.Errorf("charCodeRuns(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	for _, in := range []string{
		"[" + codes("0123456789012345678", ",") + "]",      // digits alone
		"[200, 13, 400, 97, 98, 99, 1000, 50, 60, 70, 80]", // codes out of range between
		"years 2019, 2020, 2021, 2022, 2023, 2024, 2025",
		codes("AbCdEfGh", ","), // shorter than minSpelled
	} {
		if got, ok := charCodeRuns(in); ok {
			t.Errorf("charCodeRuns(%q) = %q: no text is there", in, got)
		}
	}
}

// A token written a character at a time, between spaces, dashes, dots,
// newlines or commas, as a JSON array of characters or of their codes, as
// HTML character references or octal escapes, is found; prose, code and
// data arrays are no finding.
func TestSpelledHideNoToken(t *testing.T) {
	s := testScanner(t)
	tok := MustFake(t, "github-pat")
	chars := strings.Split(tok, "")
	var dec, hex, oct, codes strings.Builder
	var bin8, bin0b, bin7, octs []string
	for i, c := range []byte(tok) {
		fmt.Fprintf(&dec, "&#%d;", c)
		fmt.Fprintf(&hex, "&#x%x;", c)
		fmt.Fprintf(&oct, "\\%03o", c)
		if i > 0 {
			codes.WriteString(",")
		}
		fmt.Fprint(&codes, c)
		bin8, bin0b, bin7 = append(bin8, fmt.Sprintf("%08b", c)), append(bin0b, fmt.Sprintf("0b%b", c)), append(bin7, fmt.Sprintf("%b", c))
		octs = append(octs, fmt.Sprintf("%03o", c))
	}
	scan := func(body string) *Result { t.Helper(); return scanTyped(t, s, "text/plain", body) }
	for name, c := range map[string]struct{ text, enc string }{
		"spaces":              {strings.Join(chars, " "), encSpelled},
		"dashes":              {strings.Join(chars, "-"), encSpelled},
		"dots":                {strings.Join(chars, "."), encSpelled},
		"newlines":            {strings.Join(chars, "\n"), encSpelled},
		"commas":              {strings.Join(chars, ", "), encSpelled},
		"array of characters": {`["` + strings.Join(chars, `","`) + `"]`, encSpelled},
		"character codes":     {"String.fromCharCode(" + codes.String() + ")", encCodes},
		"decimal references":  {dec.String(), encEntities},
		"hex references":      {hex.String(), encEntities},
		"octal escapes":       {`"` + oct.String() + `"`, encEscapes},
		"octal codes":         {strings.Join(octs, " "), encOctal},
		"binary codes":        {strings.Join(bin8, " "), encBinary},
		"binary as bin()":     {"[" + strings.Join(bin0b, ", ") + "]", encBinary},
		"binary, 7 digits":    {strings.Join(bin7, ","), encBinary},
		"binary in one":       {strings.Join(bin8, ""), encBinary},
		"binary in JSON":      {`["` + strings.Join(bin8, `","`) + `"]`, encBinary},
	} {
		res := scan("here it is: " + c.text + " thanks")
		found := false
		for _, f := range res.Findings {
			found = found || string(f.secret) == tok && f.Decoding == c.enc
		}
		if res.Verdict != Block || !found {
			t.Errorf("%s: verdict %v, want block with the token decoded as %q:%s", name, res.Verdict, c.enc, dump(res.Findings))
		}
	}
	for _, benign := range []string{
		"I saw a cat, a dog and a bird. Then x y z and a b c went by.",
		"for i := 0; i < n; i++ { a[i] = f(a, b, c, d, e) }",
		`{"pixels":[12,200,33,47,90,128,255,0,17,64,99,101,180,3,77,45,66,91,240,12]}`,
		"Tom &amp; Jerry &#8212; a cartoon &#169; 1940",
		"flags 0110 1011 0001 1110 0101 1010 0011 1100 0110 1001 1111 0000 1010 0101 1100 0011 0111",
		strings.Repeat("1100101 ", 40), // one character many times: no token
		"mode 0644 0755 0600 0700 0644 0755 0600 0700 0644 0755 0600 0700 0644 0755 0600 0700",
		strings.Repeat("0", 256) + " " + strings.Repeat("01", 128), // bits that spell nothing printable
	} {
		if res := scan(benign); res.Verdict != Pass {
			t.Errorf("%q: verdict %v:%s", benign, res.Verdict, dump(res.Findings))
		}
	}
}

// A token written backwards or with its letters turned (ROT13, any Caesar
// shift) is found by its provider's prefix so turned, and one encoded and
// then written backwards (`base64 | rev`) by its decoding; a lockfile's
// hashes and ordinary words make no layer.
func TestTurnedToken(t *testing.T) {
	s := testScanner(t)
	for _, kind := range []string{"github-pat", "aws-access-token", "gitlab-pat", "slack-bot-token", "openai-api-key"} {
		tok := MustFake(t, kind)
		for enc, turn := range map[string]func(string) string{
			encReversed: reversed, "rot13": func(s string) string { return rot(s, 13) }, "rot1": func(s string) string { return rot(s, 1) },
			"rot3": func(s string) string { return rot(s, 3) }, "rot25": func(s string) string { return rot(s, 25) },
			encReversed + " > base64": func(s string) string { return reversed(base64.StdEncoding.EncodeToString([]byte(s))) },
			encReversed + " > hex":    func(s string) string { return reversed(hex.EncodeToString([]byte(s))) }} {
			res := scanTyped(t, s, "text/plain", "here it is: "+turn(tok)+" thanks")
			found := false
			for _, f := range res.Findings {
				found = found || string(f.secret) == tok && f.Decoding == enc
			}
			if res.Verdict != Block || !found {
				t.Errorf("%s in %s: verdict %v, want block with the token decoded as %q:%s", kind, enc, res.Verdict, enc, dump(res.Findings))
			}
		}
	}
	for _, text := range []string{
		"integrity: sha512-q1A7GmZk2LhP9dXyV3bNw0cTfRsJ8uYeKoI4xWzH6vQ5mE2nB/rC+aDgFjUtLpSiO7ZkMhN1yXwQvPb3cR8eA==",
		"the package-manager-tasks and some-other-long-words",
		`"field": "as-f32x4_convert_s_i32x4-operand"`, // "sk-x32p4…" turned 8 places: "sk-" is too short to tell
	} {
		for _, r := range encodedRuns(text) {
			if strings.HasPrefix(r.enc, encReversed) || rotOf(r.enc) != 0 {
				t.Errorf("%q: a %s layer %q", text, r.enc, r.decoded)
			}
		}
	}
}
