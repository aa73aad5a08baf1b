package scanner

import (
	"strings"
	"sync"
)

// scanArena is the memory a scan cuts its body's texts, paths and segments
// from (jsonSegmentsFast). A chat body has a megabyte of strings; taken
// anew for every request, that memory is allocated, cleared and collected
// again each time, a tenth of a large upload's CPU. A scan borrows an
// arena from scanArenas and gives it back (release) once nothing cut from
// it is left: the segments are the scan's own, and release first copies
// the findings' strings out.
type scanArena struct {
	bufs   [][]byte // every byte buffer the arena owns
	used   int      // bufs[:used] are handed out
	segs   [][]segment
	usedSg int
}

var scanArenas = sync.Pool{New: func() any { return new(scanArena) }}

// bytes is an empty buffer of capacity n or more; nil a (no arena) makes one.
func (a *scanArena) bytes(n int) []byte {
	if a == nil {
		return make([]byte, 0, n)
	}
	return take(&a.bufs, &a.used, n)
}

// segments is an empty slice of capacity n or more. The caller overwrites
// each segment whole before it uses it (jsonSegmentsFast's newSegment).
func (a *scanArena) segments(n int) []segment {
	if a == nil {
		return make([]segment, 0, n)
	}
	return take(&a.segs, &a.usedSg, n)
}

// take hands out one of (*all)[*used:] that holds n, or a new one, and
// counts it used.
func take[T any](all *[][]T, used *int, n int) []T {
	bufs := *all
	i := *used
	for i < len(bufs) && cap(bufs[i]) < n {
		i++
	}
	if i == len(bufs) {
		bufs = append(bufs, make([]T, 0, n))
		*all = bufs
	}
	bufs[*used], bufs[i] = bufs[i], bufs[*used]
	*used++
	return bufs[*used-1][:0]
}

// release detaches found from the arena's memory (the findings outlive
// the scan: events, the store, alerts) and gives the arena back for the
// next scan. Nothing else cut from it may be used after.
func (a *scanArena) release(found []Finding) {
	for i := range found {
		found[i].detach()
	}
	if a == nil {
		return
	}
	for i := range a.segs[:a.usedSg] {
		// The segments point at chains and marks: let them go.
		clear(a.segs[i][:cap(a.segs[i])])
	}
	a.used, a.usedSg = 0, 0
	scanArenas.Put(a)
}

// detach copies the finding's strings, which may share a text's memory
// (Where too, though safeWhere rebuilds it on the way out of Scan: a
// finding must not depend on that).
func (f *Finding) detach() {
	f.Where = strings.Clone(f.Where)
	f.Decoding = strings.Clone(f.Decoding)
	f.Snippet = strings.Clone(f.Snippet)
	f.Host = strings.Clone(f.Host)
	f.Fingerprint = strings.Clone(f.Fingerprint)
	f.secret = secretText(strings.Clone(string(f.secret)))
	f.header = strings.Clone(f.header)
}
