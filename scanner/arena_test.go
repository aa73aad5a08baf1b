package scanner

import (
	"encoding/json"
	"strings"
	"testing"
	"unsafe"
)

// The texts of a JSON body are cut from an arena that the next scan
// reuses: a finding kept from one scan (in an event, the store, an alert)
// must not change when later scans write their own texts there.
func TestFindingsOutliveTheArena(t *testing.T) {
	s := testScanner(t)
	s.CleanCacheEntries = -1
	token := MustFake(t, "github-pat")
	body := func(key, content string) string {
		b, _ := json.Marshal(map[string]any{"messages": []map[string]string{{"role": "user", key: content}}})
		return string(b)
	}
	res := scanChat(t, s, "a", "api.example.test", body("content", "use "+token+" for the push"), nil)
	if len(res.Findings) == 0 {
		t.Fatal("the token was not found")
	}
	type kept struct{ where, snippet, decoding, host, secret string }
	keep := func(fs []Finding) (out []kept) {
		for _, f := range fs {
			out = append(out, kept{strings.Clone(f.Where), strings.Clone(f.Snippet), strings.Clone(f.Decoding),
				strings.Clone(f.Host), strings.Clone(string(f.secret))})
		}
		return out
	}
	before := keep(res.Findings)
	// Bodies of the same shape and size, other bytes: they reuse the arena
	// and overwrite where the first one's path and text were.
	other := strings.Repeat("z", len(token))
	for range 20 {
		scanChat(t, s, "a", "api.example.test", body("cOnTeNt", "use "+other+" for the push"), nil)
	}
	after := keep(res.Findings)
	for i := range before {
		if before[i] != after[i] {
			t.Fatalf("finding %d changed after later scans: where %q -> %q, snippet %q -> %q, secret changed: %v",
				i, before[i].where, after[i].where, before[i].snippet, after[i].snippet, before[i].secret != after[i].secret)
		}
	}
}

// An arena hands out again the buffers it owns that are large enough,
// and makes a new one only when none is.
func TestScanArenaReuses(t *testing.T) {
	a := new(scanArena)
	big, small := a.bytes(100), a.bytes(10)
	a.used = 0 // as release leaves it
	same := func(x, y []byte) bool { return unsafe.SliceData(x[:1]) == unsafe.SliceData(y[:1]) }
	if got := a.bytes(50); !same(got, big) {
		t.Fatal("a 50-byte buffer was not cut from the arena's 100-byte one")
	}
	if got := a.bytes(10); !same(got, small) {
		t.Fatal("a 10-byte buffer was not cut from the arena's 10-byte one")
	}
	if got := a.bytes(200); cap(got) < 200 || len(a.bufs) != 3 {
		t.Fatalf("a buffer larger than any held: cap %d, %d buffers held, want a new one of 200 and 3", cap(got), len(a.bufs))
	}
}
