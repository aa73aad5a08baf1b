package scanner

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// layeredBody is a JSON body of about n bytes whose strings are base64 of
// percent-encoded prose, sent gzip-compressed: three layers to peel.
func layeredBody(tb testing.TB, n int) (plain, gz []byte) {
	tb.Helper()
	chunk := base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(string(chatBody(6 << 10)))))
	var msgs []map[string]string
	size := 0
	for size < n {
		msgs = append(msgs, map[string]string{"role": "tool", "content": chunk})
		size += len(chunk) + 32
	}
	plain, _ = json.Marshal(map[string]any{"messages": msgs})
	return plain, compress(tb, "gzip", plain)
}

// peakHeap runs fn and samples the heap's objects (live, and dead ones the
// collector has not freed yet) meanwhile, returning the highest growth over
// the heap before it. Two collections first: after one, what earlier code
// put in a sync.Pool is still held (as the pool's victims) and counted in
// the heap before, then freed by the first collection during fn, which
// hid as much of fn's own growth (10 MB here: the test read 3.1x, not 4.6x).
func peakHeap(fn func()) uint64 {
	runtime.GC()
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	base := sample[0].Value.Uint64()
	var peak atomic.Uint64
	done := make(chan struct{})
	go func() {
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		for {
			select {
			case <-done:
				return
			default:
			}
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > base && v-base > peak.Load() {
				peak.Store(v - base)
			}
			time.Sleep(200 * time.Microsecond)
		}
	}()
	fn()
	close(done)
	return peak.Load()
}

// TestPeakMemoryLayered bounds the heap a 10 MiB body with three layers
// needs while scanned: under four times the body. The JSON is segmented
// as it is decompressed (streamJSON), so what is live is the segments'
// texts (1.1x the body, with their keys) and a window; the collector lets
// as much garbage pile up again. It peaks at 3.3x to 3.6x at Go's default
// GOGC (2.5x to 2.6x at the 50 sluice serve runs at). When the body was
// decompressed whole first, both it and the texts were live: 4.6x.
func TestPeakMemoryLayered(t *testing.T) {
	if testing.Short() {
		t.Skip("10 MiB body")
	}
	if raceEnabled {
		t.Skip("measured without -race: the race detector's sync.Pool drops buffers at random (make test runs it again without -race)")
	}
	s := testScanner(t)
	s.MaxBodyBytes = 16 << 20
	s.Timeout = time.Minute
	plain, gz := layeredBody(t, 10<<20)
	peak := peakHeap(func() {
		res, err := s.Scan(context.Background(), &Request{Header: http.Header{"Content-Type": {"application/json"}, "Content-Encoding": {"gzip"}},
			Body: bytes.NewReader(gz)})
		if err != nil {
			t.Error(err)
			return
		}
		if res.Verdict != Pass {
			t.Errorf("verdict %v:%s", res.Verdict, dump(res.Findings))
		}
	})
	ratio := float64(peak) / float64(len(plain))
	t.Logf("body %d bytes (gzip %d), peak heap growth %d bytes = %.2fx the body", len(plain), len(gz), peak, ratio)
	if ratio >= 4 {
		t.Errorf("peak heap %.2fx the body, want < 4x", ratio)
	}
	_ = strings.NewReader
}
