package scanner

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
)

func TestBodyClass(t *testing.T) {
	if _, _, ok := bodyClass(1 << minPooledShift); ok {
		t.Error("a 64 KiB body is pooled")
	}
	if _, _, ok := bodyClass(1<<maxPooledShift + 1); ok {
		t.Error("a body over 16 MiB is pooled")
	}
	prev, prevSize := -1, 0
	for n := 1<<minPooledShift + 1; n <= 1<<maxPooledShift; n += 977 {
		class, size, ok := bodyClass(n)
		if !ok || class < 0 || class >= len(bodyPools) {
			t.Fatalf("bodyClass(%d) = %d, %d, %v", n, class, size, ok)
		}
		if size < n || size > n+n/bodySteps {
			t.Fatalf("bodyClass(%d): size %d, want within an eighth above", n, size)
		}
		if class < prev || (class == prev) != (size == prevSize) {
			t.Fatalf("bodyClass(%d) = %d (%d bytes) after %d (%d bytes)", n, class, size, prev, prevSize)
		}
		prev, prevSize = class, size
		if _, again, _ := bodyClass(size); again != size {
			t.Fatalf("a buffer of class %d (%d bytes) does not fit its own class: %d", class, size, again)
		}
	}
}

// The gateway counts a body's buffer whole against its scan memory.
func TestScanFootprintCountsTheRounding(t *testing.T) {
	s := &Scanner{}
	for _, n := range []int64{0, 1000, 1 << minPooledShift, 200_000, 1 << 20, 5_000_000, 1<<maxPooledShift - 1} {
		b := takeBody(int(n) + 1)
		if got := n + s.ScanFootprint(n); got < int64(cap(b.b)) {
			t.Errorf("a %d-byte body: %d bytes counted, its buffer holds %d", n, got, cap(b.b))
		}
		b.release()
	}
}

// scanBody scans body as a plain-text POST.
func scanBody(t *testing.T, s *Scanner, body []byte) *Result {
	t.Helper()
	res, err := s.Scan(context.Background(), &Request{Header: http.Header{"Content-Type": {"text/plain"}},
		Body: bytes.NewReader(body), Size: int64(len(body))})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// scanTyped scans body as a POST of the content type ct.
func scanTyped(t *testing.T, s *Scanner, ct, body string) *Result {
	t.Helper()
	res, err := s.Scan(context.Background(), &Request{Header: http.Header{"Content-Type": {ct}}, Body: strings.NewReader(body)})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// A body read to its end goes back to the pool, and what was read is the
// body, whatever scans come after.
func TestPooledBodyReadToItsEnd(t *testing.T) {
	s := testScanner(t)
	a := bytes.Repeat([]byte("alpha "), 30000) // 180 kB: pooled
	res := scanBody(t, s, a)
	if _, ok := res.Body.(*pooledBody); !ok {
		t.Fatalf("a %d-byte body is forwarded from %T, want the pooled buffer", len(a), res.Body)
	}
	got, err := io.ReadAll(res.Body)
	if err != nil || !bytes.Equal(got, a) {
		t.Fatalf("read %d bytes (%v), want the %d of the body", len(got), err, len(a))
	}
	// The buffer went back; a scan after takes it, and the first body
	// stays at its end.
	b := bytes.Repeat([]byte("bravo "), 30000)
	res2 := scanBody(t, s, b)
	if n, err := res.Body.Read(make([]byte, 10)); n != 0 || err != io.EOF {
		t.Fatalf("a body read to its end reads %d bytes, %v after; want 0, EOF", n, err)
	}
	if got, _ := io.ReadAll(res2.Body); !bytes.Equal(got, b) {
		t.Fatal("the second body is not what was sent")
	}
}

// A body given back before its end never reads on, not even a byte of the
// body the next scan read into its buffer.
func TestPooledBodyReleasedEarlyFails(t *testing.T) {
	s := testScanner(t)
	a := bytes.Repeat([]byte("a"), 200_000)
	res := scanBody(t, s, a)
	half := make([]byte, 100_000)
	if n, err := io.ReadFull(res.Body, half); n != len(half) || err != nil {
		t.Fatalf("read %d, %v", n, err)
	}
	res.Release()
	scanBody(t, s, bytes.Repeat([]byte("b"), 200_000)) // may reuse a's buffer
	n, err := res.Body.Read(half)
	if n != 0 || !errors.Is(err, errBodyReleased) {
		t.Fatalf("a released body read %d bytes (%q…), %v; want 0 and errBodyReleased", n, half[:min(n, 8)], err)
	}
}

// Reads racing a release (net/http may read a request body after the
// handler returned) get the body's own bytes or an error, never another
// body's. Run with -race.
func TestPooledBodyReadRacingRelease(t *testing.T) {
	s := testScanner(t)
	for i := range 20 {
		own := byte('a' + i%26)
		res := scanBody(t, s, bytes.Repeat([]byte{own}, 150_000))
		var wg sync.WaitGroup
		wg.Go(func() {
			buf := make([]byte, 4096)
			for {
				n, err := res.Body.Read(buf)
				if i := bytes.IndexFunc(buf[:n], func(r rune) bool { return r != rune(own) }); i >= 0 {
					t.Errorf("read %q in a body of %q", buf[i], own)
					return
				}
				if err != nil {
					if err != io.EOF && !errors.Is(err, errBodyReleased) {
						t.Errorf("read: %v", err)
					}
					return
				}
			}
		})
		res.Release()
		// Another body, likely into the buffer just given back.
		io.Copy(io.Discard, scanBody(t, s, bytes.Repeat([]byte{'#'}, 150_000)).Body)
		wg.Wait()
	}
}

// A redacted body is forwarded from its own copy; the buffer the original
// was read into goes back at once, and the copy stays whole.
func TestPooledBodyRedacted(t *testing.T) {
	s := testScanner(t)
	s.Policy.Actions = map[string]Action{"github-pat": Redact}
	tok := MustFake(t, "github-pat")
	body := []byte(strings.Repeat("filler text ", 10000) + tok + strings.Repeat(" more text", 10000))
	res := scanBody(t, s, body)
	if res.Verdict != Redact {
		t.Fatalf("verdict %v:%s", res.Verdict, dump(res.Findings))
	}
	if _, ok := res.Body.(*pooledBody); ok {
		t.Fatal("a redacted body is read from the pooled buffer of the original")
	}
	for range 3 {
		scanBody(t, s, bytes.Repeat([]byte("z"), len(body))).Release()
	}
	out, _ := io.ReadAll(res.Body)
	want := strings.Replace(string(body), tok, strings.Repeat("*", len(tok)), 1)
	if string(out) != want {
		t.Fatalf("redacted body changed after later scans: %d bytes, want %d", len(out), len(want))
	}
}

// Scanning a pooled body again and again takes no new body buffer.
func TestPooledBodyNoAllocPerScan(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items at random under -race")
	}
	s := testScanner(t)
	s.CleanCacheEntries = -1
	body := bytes.Repeat([]byte("plain words in a row "), 20000) // 420 kB
	scan := func() {
		res := scanBody(t, s, body)
		io.Copy(io.Discard, res.Body)
	}
	scan()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 20 {
		scan()
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / 20; per > uint64(len(body))/4 {
		t.Fatalf("each scan of a %d-byte body allocated %d bytes: the body buffer is not reused", len(body), per)
	}
}
