package scanner

import (
	"reflect"
	"strings"
	"testing"
)

// encodedRunsRef is encodedRuns without the skip ahead: byte by byte.
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
			if r, ok := decodeRun(s[i:k]); ok {
				r.start, r.end = i, k
				out = append(out, r)
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
