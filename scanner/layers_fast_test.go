package scanner

import (
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// encodedRunsRef is encodedRuns without the skip ahead: byte by byte (the
// runs it reads, wrapped, reversed or in ROT13, are read the same way).
func encodedRunsRef(s string) []run {
	var out []run
	for i := 0; i < len(s); {
		if !isB64(s[i]) {
			i++
			continue
		}
		j := i
		for j < len(s) && isB64(s[j]) {
			j++
		}
		k := j
		for k < len(s) && k-j < 2 && s[k] == '=' {
			k++
		}
		if j-i >= minBase64Run {
			var end int
			if out, end = readRun(s, i, j, k, out); end > k {
				i = end // a wrapped run, read to its last line
				continue
			}
		}
		i = k
		if i == j {
			i++
		}
	}
	return out
}

// FuzzEncodedRuns: skipping ahead finds the runs a byte-by-byte walk finds.
func FuzzEncodedRuns(f *testing.F) {
	f.Add("see ZGF0YSBkYXRhIGRhdGE= and 6869206869206869206869206869206869 ok")
	f.Add("x." + strings.Repeat("QUJD", 4) + "==" + strings.Repeat("QUJD", 5) + " " + strings.Repeat("a", 15) + "=" + strings.Repeat("YWJj", 4))
	f.Add(strings.Repeat("the words are short ", 3) + "aGVsbG8gd29ybGQgaGVsbG8")
	f.Add("x aGVsbG8gd29ybGQgaGVs\nbG8gd29ybGQ= and a line\nnbG8gd29ybGQ=") // wrapped
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := encodedRuns(s), encodedRunsRef(s); !reflect.DeepEqual(got, want) {
			t.Fatalf("got %+v, want %+v", got, want)
		}
	})
}

func TestEncodedRunsSkip(t *testing.T) {
	for n := range 40 {
		s := strings.Repeat("ab ", n%5) + "aGVsbG8gd29ybGQgaGVsbG8"[:min(n, 23)] + strings.Repeat(" cd", n%3)
		if got, want := encodedRuns(s), encodedRunsRef(s); !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: got %+v, want %+v", s, got, want)
		}
	}
	if len(encodedRuns("x aGVsbG8gd29ybGQgaGVsbG8 y")) != 1 {
		t.Fatal("run not found")
	}
}

// decodeLinesRef is decodeLines cutting out every line.
func decodeLinesRef(s string, has func(string) bool, dec func(string) string) (string, bool) {
	var parts []string
	for line := range strings.SplitSeq(strings.TrimSuffix(s, "\n"), "\n") {
		if has(line) {
			if d := dec(line); d != line {
				parts = append(parts, d)
			}
		}
	}
	switch len(parts) {
	case 0:
		return "", false
	case 1:
		return parts[0], true
	}
	return strings.Join(parts, "\n") + "\n", true
}

// FuzzDecodeLines: passing over the lines without a mark decodes the
// lines that cutting out every one decodes.
func FuzzDecodeLines(f *testing.F) {
	f.Add("a\\nb\nplain\n\\u0041 and %41%42\n%zz\n\n\\")
	f.Add("%\n%4\n%41")
	f.Add("x = \"line\\n\"\ny = 1\nz = \"%41\"\n")
	f.Fuzz(func(t *testing.T, s string) {
		for _, d := range []struct {
			mark byte
			has  func(string) bool
			dec  func(string) string
		}{
			{'\\', hasEscapes, unescape},
			{'%', hasPercent, func(l string) string { d, _ := percentLevels(l); return d }},
		} {
			got, okG := decodeLines(s, d.mark, d.has, d.dec)
			want, okW := decodeLinesRef(s, d.has, d.dec)
			if got != want || okG != okW {
				t.Fatalf("mark %q: got %q %v, want %q %v", d.mark, got, okG, want, okW)
			}
		}
	})
}

// mayEncodeText never turns away an encoding of ASCII text, in any of the
// encodings and cases the decoders read, and turns away most hashes.
func TestMayEncodeText(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 500 {
		b := make([]byte, 8+r.IntN(40))
		for i := range b {
			b[i] = byte(0x20 + r.IntN(0x5f))
			if r.IntN(20) == 0 {
				b[i] = "\t\n\r"[r.IntN(3)]
			}
		}
		h := hex.EncodeToString(b)
		b32 := base32.StdEncoding.EncodeToString(b)
		for _, enc := range []string{h, strings.ToUpper(h), b32, strings.ToLower(b32),
			base64.StdEncoding.EncodeToString(b), base64.RawURLEncoding.EncodeToString(b)} {
			if !mayEncodeText(enc) {
				t.Fatalf("%q (encoding %q) turned away", b, enc)
			}
		}
	}
	passed := 0
	for range 1000 {
		raw := make([]byte, 32)
		for i := range raw {
			raw[i] = byte(r.Uint32())
		}
		for _, enc := range []string{hex.EncodeToString(raw), base64.StdEncoding.EncodeToString(raw)} {
			if mayEncodeText(enc) {
				passed++
			}
		}
	}
	if passed > 200 {
		t.Errorf("%d of 2,000 hashes may be text: the check reads too little", passed)
	}
}
