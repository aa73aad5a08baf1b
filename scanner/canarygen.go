package scanner

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// CanaryGenFile holds 8 bytes that Issue changes (to random ones) after it
// appends records. A gateway maps the file and compares those bytes on
// every scan: a memory load, where a stat of the canary file was a system
// call on every request. Random rather than a counter: two issuers at once
// cannot write the value a scanner saw before them.
const CanaryGenFile = "canaries.gen"

// canaryStatEvery bounds how long an edit of the canary file that did not
// go through Issue (an older binary, a restored backup) goes unseen: the
// file is still looked at that often.
var canaryStatEvery = time.Second

// bumpCanaryGen gives dir's generation file new bytes.
func bumpCanaryGen(dir string) error {
	var b [8]byte
	rand.Read(b[:])
	f, err := os.OpenFile(filepath.Join(dir, CanaryGenFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("scanner: canaries: %w", err)
	}
	if _, err := f.WriteAt(b[:], 0); err != nil {
		f.Close()
		return fmt.Errorf("scanner: canaries: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("scanner: canaries: %w", err)
	}
	return nil
}

// canaryGen is the generation file, mapped for reading (nil: not mapped;
// then every scan looks at the canary file), and which file it is.
type canaryGen struct {
	b    []byte
	info os.FileInfo
}

// load reads the generation; false when there is none to read. A file
// truncated under the mapping faults on the read: that is a panic here
// (SetPanicOnFault), recovered, not the gateway's end.
func (g *canaryGen) load() (v uint64, ok bool) {
	if g == nil {
		return 0, false
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if recover() != nil {
			v, ok = 0, false
		}
	}()
	// The mapping starts on a page: the load is aligned, and atomic.
	return atomic.LoadUint64((*uint64)(unsafe.Pointer(unsafe.SliceData(g.b)))), true
}

// canaryWatch is what a CanaryStore knows of the generation it last read
// the canary file at.
type canaryWatch struct {
	gen      atomic.Pointer[canaryGen]
	mu       sync.Mutex    // follow's
	seen     atomic.Uint64 // the generation the records in memory were read at
	fresh    atomic.Bool   // records are in memory
	nextStat atomic.Int64  // monotonic nanoseconds (sinceStart): look at the files again then, changed or not
}

// start is what the watches' times count from: a monotonic clock, which a
// step of the wall clock does not move.
var start = time.Now()

func sinceStart() int64 { return int64(time.Since(start)) }

// unchanged reports whether the records in memory are current: the
// generation is the one they were read at, and the files are not due for
// their look.
func (w *canaryWatch) unchanged() bool {
	gen, ok := w.gen.Load().load()
	return ok && w.fresh.Load() && gen == w.seen.Load() && sinceStart() < w.nextStat.Load()
}

// follow maps dir's generation file when none is mapped, or when the one
// mapped is no longer that file (deleted, or replaced by a restore or a
// rename), and returns the generation to read the canary file at. It runs
// when unchanged said no, so at least every canaryStatEvery: a file
// replaced under a running gateway is followed within that time. An old
// mapping is not unmapped, as another scan may be reading it; it is one
// page, and kept only when the file was replaced.
func (w *canaryWatch) follow(dir string) uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	g := w.gen.Load()
	if g == nil || !sameFile(g.info, filepath.Join(dir, CanaryGenFile)) {
		if m := mapCanaryGen(dir); m != nil {
			g = m
			w.gen.Store(m)
		}
	}
	gen, _ := g.load()
	return gen
}

func sameFile(info os.FileInfo, path string) bool {
	st, err := os.Stat(path)
	return err == nil && os.SameFile(info, st)
}

// done records that the records were read at gen (loaded before the read).
func (w *canaryWatch) done(gen uint64) {
	w.seen.Store(gen)
	w.nextStat.Store(sinceStart() + int64(canaryStatEvery))
	w.fresh.Store(true)
}
