package reload

import (
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

func TestNowCountsResults(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.yaml")
	os.WriteFile(path, []byte("a"), 0o600)
	fail := true
	var whys []string
	var results []bool
	w := &Watcher{Path: path, OnResult: func(ok bool) { results = append(results, ok) },
		Reload: func(why string) error {
			whys = append(whys, why)
			if fail {
				return errors.New("bad file")
			}
			return nil
		}}
	w.Start()
	if w.Now("first") {
		t.Fatal("a failed reload reported success")
	}
	fail = false
	if !w.Now("second") {
		t.Fatal("a good reload reported failure")
	}
	if ok, failed := w.Results(); ok != 1 || failed != 1 {
		t.Fatalf("results %d ok, %d failed; want 1, 1", ok, failed)
	}
	if len(results) != 2 || results[0] || !results[1] || len(whys) != 2 || whys[0] != "first" {
		t.Fatalf("OnResult %v, reasons %v", results, whys)
	}
}

// The watcher reloads when the content changes, and once only for a file that
// fails: the next change tries again.
func TestRunPollsTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.yaml")
	os.WriteFile(path, []byte("one"), 0o600)
	var calls atomic.Int64
	w := &Watcher{Path: path, Interval: 10 * time.Millisecond,
		Reload: func(string) error { calls.Add(1); return errors.New("broken") }}
	w.Start()
	go w.Run(t.Context())
	time.Sleep(50 * time.Millisecond)
	if n := calls.Load(); n != 0 {
		t.Fatalf("%d reloads of an unchanged file", n)
	}
	// Written whole (temp file and rename), as editors and ConfigMaps do: a
	// poll must not see the file half-written, which is a change of its own.
	replaceFile(t, path, "two, longer")
	waitFor(t, func() bool { return calls.Load() == 1 })
	time.Sleep(50 * time.Millisecond)
	if n := calls.Load(); n != 1 {
		t.Fatalf("a broken file was reloaded %d times; want once until it changes", n)
	}
	replaceFile(t, path, "three")
	waitFor(t, func() bool { return calls.Load() == 2 })
}

func replaceFile(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
