package scanner

import (
	"context"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func hexWith(s, prefix, sep string) string {
	parts := make([]string, len(s))
	for i := range len(s) {
		parts[i] = prefix + hex.EncodeToString([]byte{s[i]})
	}
	return strings.Join(parts, sep)
}

func unicodeEscaped(s string) string {
	var b strings.Builder
	for _, r := range s {
		fmt.Fprintf(&b, `\u%04x`, r)
	}
	return b.String()
}

// Each layer must reveal the secret it wraps, and say so in Decoding.
func TestDecoders(t *testing.T) {
	s := testScanner(t)
	tok := MustFake(t, "github-pat")
	pct := func(x string) string { return url.PathEscape(strings.ReplaceAll(url.QueryEscape(x), "_", "%5F")) }
	for _, tc := range []struct {
		name, body, decoding string
	}{
		{"hex dashes", "dump " + hexWith(tok, "", "-") + " end", encHexSep},
		{"hex colons", "dump " + hexWith(tok, "", ":") + " end", encHexSep},
		{"hex spaces upper", "dump " + strings.ToUpper(hexWith(tok, "", " ")) + " end", encHexSep},
		{"hex \\x", `b"` + hexWith(tok, `\x`, "") + `"`, encHexSep},
		{"hex 0x list", "{" + hexWith(tok, "0x", ", ") + "}", encHexSep},
		{"percent x3", "v=" + url.QueryEscape(pct(tok)), "percent > percent > percent"},
		{"unicode escapes", `const t = "` + unicodeEscaped(tok) + `"`, encEscapes},
		{"escaped json in text", `{\"token\":\"` + tok + `\"}`, ""},
		{"quoted-printable", "Content: " + strings.Repeat("x", 60) + " token=3D" + tok[:10] + "=\r\n" + tok[10:] + "=20", encQP},
		{"base64 of hex dashes", base64.StdEncoding.EncodeToString([]byte("key " + hexWith(tok, "", "-"))), "base64 > " + encHexSep},
		{"base32", "data " + base32.StdEncoding.EncodeToString([]byte("token "+tok)) + " end", encBase32},
		{"base32 lower case unpadded", `{"d":"` + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString([]byte(tok+"\n"))) + `"}`, encBase32},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := s.Scan(context.Background(), &Request{Header: http.Header{"Content-Type": {"text/plain"}}, Body: strings.NewReader(tc.body)})
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range res.Findings {
				if string(f.secret) == tok && (tc.decoding == "" || f.Decoding == tc.decoding) {
					return
				}
			}
			t.Fatalf("not found with decoding %q:%s", tc.decoding, dump(res.Findings))
		})
	}
}

func TestHexSepRunsIgnoresShortAndBinary(t *testing.T) {
	for _, s := range []string{"aa:bb:cc:dd:ee:ff", "00-01-02-03-04-05-06-07-08-09-0a-0b-0c-0d-0e-0f-10", "2024-01-02 10:11:12"} {
		if rs := hexSepRuns(s); len(rs) != 0 {
			t.Errorf("hexSepRuns(%q) = %v", s, rs)
		}
	}
}
