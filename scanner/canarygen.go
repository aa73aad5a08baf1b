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
	return f.Close()
}

// canaryGen is the generation file, mapped for reading (nil: not mapped;
// then every scan looks at the canary file).
type canaryGen struct{ b []byte }

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
	once     sync.Once // maps gen
	gen      *canaryGen
	seen     atomic.Uint64 // the generation the records in memory were read at
	fresh    atomic.Bool   // records are in memory
	nextStat atomic.Int64  // unix nanoseconds: look at the canary file again then, changed or not
}

// unchanged reports whether the records in memory are current: the
// generation is the one they were read at, and the canary file is not due
// for its look. gen is the generation loaded, for done.
func (w *canaryWatch) unchanged(dir string) (gen uint64, ok bool) {
	w.once.Do(func() { w.gen = mapCanaryGen(dir) })
	gen, ok = w.gen.load()
	return gen, ok && w.fresh.Load() && gen == w.seen.Load() && time.Now().UnixNano() < w.nextStat.Load()
}

// done records that the records were read at gen (loaded before the read).
func (w *canaryWatch) done(gen uint64) {
	w.seen.Store(gen)
	w.nextStat.Store(time.Now().Add(canaryStatEvery).UnixNano())
	w.fresh.Store(true)
}
