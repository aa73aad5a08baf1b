// Package reload calls a reload function when a file changes or on SIGHUP, one
// attempt at a time, and counts the attempts that succeeded and failed.
package reload

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Watcher watches Path. Fields are set before Start and not changed afterwards.
type Watcher struct {
	// Path is the file watched.
	Path string
	// Reload does the reload; an error means the previous state stays. why says what
	// triggered it ("SIGHUP", "file changed", or the caller's own reason).
	Reload func(why string) error
	// OnResult, when set, is called after every attempt with its result (a metric).
	OnResult func(ok bool)
	// Interval between polls of the file (mtime and size, then the content hash).
	// Zero: 2s.
	Interval time.Duration

	mu         sync.Mutex // one reload at a time
	stamp      stamp
	version    atomic.Value // string: the file's version as last tried
	ok, failed atomic.Int64
}

type stamp struct {
	mod  time.Time
	size int64
	hash [sha256.Size]byte
}

// Start records the file as it is now, as already loaded.
func (w *Watcher) Start() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stamp, _ = stampOf(w.Path, stamp{})
	w.version.Store(hex.EncodeToString(w.stamp.hash[:8]))
}

// Version is the file's version as last loaded or tried: the first bytes of its
// hash, in hex. Safe to call from inside Reload and OnResult.
func (w *Watcher) Version() string {
	v, _ := w.version.Load().(string)
	return v
}

// stampOf stats the file and hashes it only when mtime or size changed.
func stampOf(path string, prev stamp) (stamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return prev, err
	}
	if fi.ModTime().Equal(prev.mod) && fi.Size() == prev.size {
		return prev, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return prev, err
	}
	return stamp{mod: fi.ModTime(), size: fi.Size(), hash: sha256.Sum256(b)}, nil
}

// Run polls the file and listens for SIGHUP until ctx ends.
func (w *Watcher) Run(ctx context.Context) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	iv := w.Interval
	if iv <= 0 {
		iv = 2 * time.Second
	}
	tick := time.NewTicker(iv)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			w.Now("SIGHUP")
		case <-tick.C:
			w.mu.Lock()
			prev := w.stamp
			st, err := stampOf(w.Path, prev)
			w.mu.Unlock()
			if err == nil && st.hash != prev.hash {
				w.Now("file changed")
			}
		}
	}
}

// Now reloads at once and reports whether the reload succeeded.
func (w *Watcher) Now(why string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if st, err := stampOf(w.Path, stamp{}); err == nil {
		// Remember what was tried, also when it fails: a broken file is reported once,
		// not every poll; the next change or SIGHUP tries again.
		w.stamp = st
		w.version.Store(hex.EncodeToString(st.hash[:8]))
	}
	ok := w.Reload(why) == nil
	if ok {
		w.ok.Add(1)
	} else {
		w.failed.Add(1)
	}
	if w.OnResult != nil {
		w.OnResult(ok)
	}
	return ok
}

// Results returns how many reloads succeeded and failed since start.
func (w *Watcher) Results() (ok, failed int64) { return w.ok.Load(), w.failed.Load() }
