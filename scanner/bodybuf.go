package scanner

import (
	"bytes"
	"errors"
	"io"
	"math/bits"
	"sync"
)

// The buffer a body is read into is pooled. Taken anew, a 1 MiB upload's
// buffer was allocated, cleared, faulted in and collected on every
// request: reading the body was 8.6 % of a scan of text without keywords
// (BenchmarkScan/nokw, CPU profile), nearly all of it that churn. A buffer
// goes back once the body was read to its end (forwarded), or on
// Result.Release.
//
// Buffers come in size classes of eighths of a power of two, so that one
// is at most an eighth larger than the body it holds; bodies outside the
// pooled range are read into buffers of their own.
const (
	minPooledShift = 16 // bodies of 64 KiB and less cost little to allocate
	maxPooledShift = 24 // larger than 16 MiB: rare, not worth holding on to
	bodySteps      = 8  // classes per power of two
)

var bodyPools [(maxPooledShift - minPooledShift) * bodySteps]sync.Pool

// bodyBuf is a body buffer and the pool it goes back to (-1: none).
type bodyBuf struct {
	b     []byte
	class int
}

// bodyClass is the size class of n bytes and its buffers' size; ok is false
// outside the pooled range.
func bodyClass(n int) (class, size int, ok bool) {
	if n <= 1<<minPooledShift || n > 1<<maxPooledShift {
		return 0, 0, false
	}
	k := bits.Len(uint(n-1)) - 1 // 2^k < n <= 2^(k+1)
	step := 1 << k / bodySteps
	j := (n - 1<<k + step - 1) / step // 1..bodySteps
	return (k-minPooledShift)*bodySteps + j - 1, 1<<k + j*step, true
}

// takeBody returns an empty buffer that holds n bytes or more.
func takeBody(n int) *bodyBuf {
	class, size, ok := bodyClass(n)
	if !ok {
		return &bodyBuf{b: make([]byte, 0, max(n, 512)), class: -1}
	}
	if b, _ := bodyPools[class].Get().(*bodyBuf); b != nil {
		return b
	}
	return &bodyBuf{b: make([]byte, 0, size), class: class}
}

// release gives b back to its pool; nothing may use it after.
func (b *bodyBuf) release() {
	if b.class >= 0 {
		b.b = b.b[:0]
		bodyPools[b.class].Put(b)
	}
}

// errBodyReleased is what a Read of a body returns once its buffer went
// back to the pool before the body was read to its end.
var errBodyReleased = errors.New("scanner: body read after it was released")

// pooledBody reads a body from a pooled buffer, which goes back to its pool
// as soon as the body was read to its end, or on Close. The lock keeps a
// Read that comes late (net/http's transport may still read a request
// body after the handler returned) from reading a buffer that another
// request's scan has taken.
type pooledBody struct {
	mu   sync.Mutex
	r    bytes.Reader
	buf  *bodyBuf
	read bool // read to its end: a later Read is at EOF
}

func newPooledBody(buf *bodyBuf) *pooledBody {
	p := &pooledBody{buf: buf}
	p.r.Reset(buf.b)
	return p
}

func (p *pooledBody) Read(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.buf == nil {
		if p.read {
			return 0, io.EOF
		}
		return 0, errBodyReleased
	}
	n, err := p.r.Read(b)
	if p.r.Len() == 0 {
		// The last bytes were copied out: nothing reads the buffer again.
		p.read = true
		p.releaseLocked()
	}
	return n, err
}

// Close gives the buffer back. It may be called more than once.
func (p *pooledBody) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.releaseLocked()
	return nil
}

func (p *pooledBody) releaseLocked() {
	if p.buf != nil {
		p.r.Reset(nil)
		p.buf.release()
		p.buf = nil
	}
}

// Release gives back the memory that Body reads from, for the next scan,
// when the body will not be read to its end (which gives it back too): a
// refused request, a message scanned and forwarded from its own bytes.
// Body must not be read after (a Read then fails). Without it the memory
// is collected as any other.
func (r *Result) Release() {
	if p, ok := r.Body.(*pooledBody); ok {
		p.Close()
	}
}

// ScanFootprint is what a scan of a body of n bytes holds besides the body
// itself: its buffer's rounding up to a size class (gateway.ScanFootprinter).
// Decoded layers are not counted: most bodies have none.
func (s *Scanner) ScanFootprint(n int64) int64 { return bodySlack(n) }

// ScanFootprint is the same for the scanner in force: its buffers' rounding.
func (h *Holder) ScanFootprint(n int64) int64 { return bodySlack(n) }

func bodySlack(n int64) int64 {
	if n < 0 || n >= 1<<maxPooledShift {
		return 0
	}
	want := int(n) + 1 // bodyHint: one byte more, to see the end
	if _, size, ok := bodyClass(want); ok {
		return int64(size) - n
	}
	return int64(max(want, 512) - int(n))
}
