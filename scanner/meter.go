package scanner

import (
	"errors"
	"io"
	"sync"
)

// ErrScanMemory is a scan's error when what a compressed body or run
// inflates to does not fit in the caller's memory bound (Request.Reserve):
// nothing was found or passed, and the request may be retried.
var ErrScanMemory = errors.New("scanner: no scan memory left for what the request inflates to; retry shortly")

// meterStep is what a meter takes of the caller's bound at a time: one
// call a step, not one a read.
const meterStep = 64 << 10

// meter counts the bytes a scan inflates (a compressed body, compressed
// runs, archives) against the caller's bound, a step ahead: the
// decompressors' output buffers grow as they fill (at most twice what was
// counted), and a scan whose inflated bytes the bound cannot take fails
// with ErrScanMemory instead of holding them uncounted. A nil meter, or
// one without reserve, counts nothing. The groups of a large body are
// inspected at once: it is safe for concurrent use.
type meter struct {
	reserve    func(n int64) bool
	mu         sync.Mutex
	used, held int64
	full       bool
}

func newMeter(reserve func(n int64) bool) *meter {
	if reserve == nil {
		return nil
	}
	return &meter{reserve: reserve}
}

// add counts n more bytes; false once the bound took no more.
func (m *meter) add(n int64) bool {
	if m == nil {
		return true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.full {
		return false
	}
	m.used += n
	for m.used > m.held {
		step := max(meterStep, m.used-m.held)
		if !m.reserve(step) {
			m.full = true
			return false
		}
		m.held += step
	}
	return true
}

// exhausted reports whether the bound took no more.
func (m *meter) exhausted() bool {
	if m == nil {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.full
}

// reader is r with what it yields counted: past what the bound takes, its
// reads fail with ErrScanMemory.
func (m *meter) reader(r io.Reader) io.Reader {
	r, _ = m.counted(r, 0)
	return r
}

// counted is reader, with hint bytes counted first: the buffer about to be
// made for r's output (a gzip trailer may claim any size). The first hint
// bytes r yields are in it; ok is false when the bound took no more.
func (m *meter) counted(r io.Reader, hint int) (io.Reader, bool) {
	if m == nil {
		return r, true
	}
	if !m.add(int64(hint)) {
		return nil, false
	}
	return &meteredReader{r: r, m: m, free: int64(hint)}, true
}

type meteredReader struct {
	r    io.Reader
	m    *meter
	free int64 // bytes counted already
}

func (mr *meteredReader) Read(p []byte) (int, error) {
	n, err := mr.r.Read(p)
	if over := int64(n) - mr.free; over > 0 {
		mr.free = 0
		if !mr.m.add(over) {
			return n, ErrScanMemory
		}
	} else {
		mr.free -= int64(n)
	}
	return n, err
}
