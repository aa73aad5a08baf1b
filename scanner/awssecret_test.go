package scanner

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"math/rand/v2"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// fakeAWSSecret is a random string in an AWS secret access key's format.
func fakeAWSSecret(r *rand.Rand) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	for {
		b := make([]byte, awsSecretLen)
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		if s := string(b); strings.ContainsAny(s, "+/") {
			return s
		}
	}
}

// An AWS secret key's shape hidden behind hex (among binary bytes, or in
// text) or base64 is found; the same shape in plain text, a piece of a
// longer run, a hex digest and random binary are not.
func TestAWSSecretEncoded(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	key := fakeAWSSecret(r)
	binary := func(s string) []byte {
		return append(append([]byte{0xde, 0xad, 0xbe, 0xef, 0x00, 0x11}, s...), 0x0a, 0x00, 0xff)
	}
	noise := make([]byte, 4096)
	for i := range noise {
		noise[i] = byte(r.IntN(256))
	}
	cases := []struct {
		name, contentType, body string
		found                   bool
	}{
		{"hex of binary around the key", "application/octet-stream", hex.EncodeToString(binary(key)), true},
		{"hex in a JSON field", "application/json", `{"blob":"` + hex.EncodeToString(binary(key)) + `"}`, true},
		{"hex of text holding the key", "text/plain", hex.EncodeToString([]byte("cfg=" + key + "\n")), true},
		{"base64 of text holding the key", "text/plain", base64.StdEncoding.EncodeToString([]byte("value " + key + " end")), true},

		{"the shape in plain text", "text/plain", "value " + key + " end", false},
		{"a piece of a longer run, behind hex", "application/octet-stream", hex.EncodeToString(binary(key + "Q9")), false},
		{"39 characters, behind hex", "application/octet-stream", hex.EncodeToString(binary(key[:39])), false},
		{"a SHA-1 digest behind hex", "text/plain", hex.EncodeToString([]byte("sha1 da39a3ee5e6b4b0d3255bfef95601890afd80709")), false},
		{"random binary as hex", "application/octet-stream", hex.EncodeToString(noise), false},
		{"prose behind hex", "text/plain", hex.EncodeToString([]byte("ThisIsAPlainSentenceWithSlash/AndDigits1 and more words")), false},
	}
	s := testScanner(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := s.Scan(context.Background(), &Request{Host: "upload.example.test",
				Header: http.Header{"Content-Type": {tc.contentType}}, Body: strings.NewReader(tc.body)})
			if err != nil {
				t.Fatal(err)
			}
			var got *Finding
			for i, f := range res.Findings {
				if f.Rule == RuleAWSSecretEncoded {
					got = &res.Findings[i]
				}
			}
			if (got != nil) != tc.found {
				t.Fatalf("found %v, want %v:%s", got != nil, tc.found, dump(res.Findings))
			}
			if got == nil {
				return
			}
			if got.Action != Block {
				t.Errorf("action %v, want block", got.Action)
			}
			if strings.Contains(got.Snippet, key) || strings.Contains(got.Where, key) {
				t.Errorf("the key is in the finding's snippet or place: %q %q", got.Snippet, got.Where)
			}
		})
	}
}

// detectAWSSecretInHexRef is detectAWSSecretInHex without the skip ahead:
// every hex run, byte by byte.
func detectAWSSecretInHexRef(text string, emit func(Finding)) {
	for i := 0; i < len(text); {
		if !isHexByte[text[i]] {
			i++
			continue
		}
		j := i + 1
		for j < len(text) && isHexByte[text[j]] {
			j++
		}
		if run := text[i:j]; len(run) >= 2*awsSecretLen {
			run = run[:len(run)&^1]
			if b, err := hex.DecodeString(run); err == nil && !textual(b) {
				detectAWSSecretEncoded(string(b), func(f Finding) {
					f.Snippet = "hex-encoded bytes: " + f.Snippet
					emit(f)
				})
			}
		}
		i = j
	}
}

// FuzzAWSSecretInHex: skipping ahead finds what reading every hex run finds.
func FuzzAWSSecretInHex(f *testing.F) {
	r := rand.New(rand.NewPCG(11, 12))
	pad := func(n int) string { return hex.EncodeToString(randBytesFrom(r, n)) }
	f.Add("x " + pad(7) + hex.EncodeToString([]byte(fakeAWSSecret(r))) + pad(9) + " y")
	f.Add(pad(39) + "g" + pad(41) + "-" + hex.EncodeToString([]byte("k="+fakeAWSSecret(r))))
	f.Add(strings.Repeat("ab", 39) + "z" + strings.Repeat("0f", 41))
	f.Fuzz(func(t *testing.T, s string) {
		var got, want []Finding
		detectAWSSecretInHex(s, func(f Finding) { got = append(got, f) })
		detectAWSSecretInHexRef(s, func(f Finding) { want = append(want, f) })
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("got %d findings %+v, want %d %+v", len(got), got, len(want), want)
		}
	})
}

// randBytesFrom is n bytes of r: binary padding around a hidden key.
func randBytesFrom(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}
