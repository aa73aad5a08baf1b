package scanner

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// bound is a Request.Reserve that takes at most limit bytes in all.
type bound struct {
	mu           sync.Mutex
	taken, limit int64
}

func (b *bound) reserve(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.taken+n > b.limit {
		return false
	}
	b.taken += n
	return true
}

// What a body, a compressed run or a JSON body streamed while it is
// decompressed inflates to is taken from the caller's bound before it is
// held: within the bound the scan passes and took about what it inflated
// (a step ahead); past it the scan fails with ErrScanMemory, found nothing
// and passed nothing.
func TestInflatedIsCounted(t *testing.T) {
	s := testScanner(t)
	s.MaxBodyBytes = 4 << 20
	// Every scan inflates again: a text found clean is not looked at twice.
	s.CleanCacheEntries = -1
	prose := strings.Repeat("the agent reads the file and writes a patch. ", 24<<10) // about 1 MiB
	jsonBody := `{"messages":[{"role":"user","content":"` + prose + `"}]}`
	forged := compress(t, "gzip", []byte("hi"))
	binary.LittleEndian.PutUint32(forged[len(forged)-4:], 1<<31) // a trailer that claims 2 GiB
	for name, tc := range map[string]struct {
		header   http.Header
		body     []byte
		inflated int64
	}{
		"gzip body":   {http.Header{"Content-Encoding": {"gzip"}, "Content-Type": {"text/plain"}}, compress(t, "gzip", []byte(prose)), int64(len(prose))},
		"zstd body":   {http.Header{"Content-Encoding": {"zstd"}, "Content-Type": {"text/plain"}}, compress(t, "zstd", []byte(prose)), int64(len(prose))},
		"gzip JSON":   {http.Header{"Content-Encoding": {"gzip"}, "Content-Type": {"application/json"}}, compress(t, "gzip", []byte(jsonBody)), int64(len(jsonBody))},
		"gzip run":    {http.Header{"Content-Type": {"text/plain"}}, []byte("data: " + base64.StdEncoding.EncodeToString(compress(t, "gzip", []byte(prose)))), int64(len(prose))},
		"zip file":    {http.Header{"Content-Type": {"application/zip"}}, zipOf(t, map[string]string{"notes.txt": prose}), int64(len(prose))},
		"xz file":     {http.Header{"Content-Type": {"application/octet-stream"}}, xzOf(t, []byte(prose), 0), int64(len(prose))},
		"forged size": {http.Header{"Content-Encoding": {"gzip"}, "Content-Type": {"text/plain"}}, forged, s.MaxBodyBytes},
	} {
		scan := func(limit int64) (*Result, *bound, error) {
			b := &bound{limit: limit}
			res, err := s.Scan(context.Background(), &Request{Header: tc.header, Body: bytes.NewReader(tc.body), Reserve: b.reserve})
			return res, b, err
		}
		if name != "forged size" {
			res, b, err := scan(1 << 40)
			if err != nil || res.Verdict != Pass {
				t.Fatalf("%s within the bound: %v, %v", name, err, res)
			}
			if b.taken < tc.inflated || b.taken > 2*tc.inflated+2*meterStep {
				t.Errorf("%s: took %d bytes for %d inflated", name, b.taken, tc.inflated)
			}
			res.Release()
		}
		res, _, err := scan(tc.inflated / 4)
		if !errors.Is(err, ErrScanMemory) || res != nil {
			t.Errorf("%s past the bound: %v, %v; want ErrScanMemory", name, err, res)
		}
	}
	// Without Reserve nothing is counted, and the scan is as before.
	res, err := s.Scan(context.Background(), &Request{Header: http.Header{"Content-Encoding": {"gzip"}}, Body: bytes.NewReader(compress(t, "gzip", []byte(prose)))})
	if err != nil || res.Verdict != Pass {
		t.Fatalf("no bound: %v, %v", err, res)
	}
}
