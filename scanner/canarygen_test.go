package scanner

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// canaryFixture is a scanner whose canaries live in a temporary directory,
// and the means to plant canaries there the way another process would.
type canaryFixture struct {
	t     *testing.T
	dir   string
	key   []byte
	s     *Scanner
	store *CanaryStore
}

func newCanaryFixture(t *testing.T) *canaryFixture {
	dir := t.TempDir()
	key, err := LoadOrCreateKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	f := &canaryFixture{t: t, dir: dir, key: key, s: testScanner(t), store: &CanaryStore{Dir: dir, Key: key}}
	f.s.Key, f.s.Canaries = key, f.store
	return f
}

// seen reports whether a scan of a body holding value finds a canary.
func (f *canaryFixture) seen(value string) bool {
	res, err := f.s.Scan(context.Background(), &Request{Host: "api.example.test", Header: http.Header{},
		Body: strings.NewReader("v=" + value)})
	if err != nil {
		f.t.Fatal(err)
	}
	return res.Reason == "canary-detected"
}

// appendByHand writes a canary record as a tool that does not know the
// generation file would (an older binary, a restored backup).
func (f *canaryFixture) appendByHand() string {
	v := githubToken("ghp_")
	line, _ := json.Marshal(CanaryRecord{ID: "cn-hand", Tenant: "acme", Kind: "github-pat",
		Fingerprint: fingerprint(f.key, v), Length: len(v), Created: time.Now().UTC()})
	file, err := os.OpenFile(filepath.Join(f.dir, CanaryFile), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		f.t.Fatal(err)
	}
	defer file.Close()
	if _, err := file.Write(append(line, '\n')); err != nil {
		f.t.Fatal(err)
	}
	return v
}

func (f *canaryFixture) issue() string {
	cs, err := (&CanaryStore{Dir: f.dir, Key: f.key}).Issue("acme", "run-1")
	if err != nil {
		f.t.Fatal(err)
	}
	return cs[2].Value
}

// A scan looks at the generation, not at the canary file: a record
// appended without changing the generation is not read on the next scan,
// and the next Issue (which changes it) makes the scan after it read
// both.
func TestCanaryGenerationSparesTheStat(t *testing.T) {
	defer func(d time.Duration) { canaryStatEvery = d }(canaryStatEvery)
	canaryStatEvery = time.Hour
	f := newCanaryFixture(t)
	issued := f.issue()
	if !f.seen(issued) {
		t.Fatal("an issued canary was not recognised")
	}
	hand := f.appendByHand()
	if f.seen(hand) {
		t.Fatal("the canary file was read again though its generation did not change: every scan still looks at it")
	}
	again := f.issue()
	if !f.seen(again) || !f.seen(hand) {
		t.Fatal("after Issue changed the generation, the next scan did not read the file")
	}
}

// An edit that does not change the generation is still seen, within
// canaryStatEvery.
func TestCanaryFileIsLookedAtAnyway(t *testing.T) {
	defer func(d time.Duration) { canaryStatEvery = d }(canaryStatEvery)
	canaryStatEvery = 20 * time.Millisecond
	f := newCanaryFixture(t)
	f.seen("nothing")
	hand := f.appendByHand()
	for deadline := time.Now().Add(5 * time.Second); !f.seen(hand); {
		if time.Now().After(deadline) {
			t.Fatal("a canary appended by hand was not recognised within 5 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A generation file truncated under the mapping makes the read fault: the
// scan must neither crash nor miss a canary; it looks at the file instead.
func TestCanaryGenerationTruncated(t *testing.T) {
	defer func(d time.Duration) { canaryStatEvery = d }(canaryStatEvery)
	canaryStatEvery = time.Hour
	f := newCanaryFixture(t)
	f.seen("nothing") // maps the generation file
	if f.store.watch.gen.Load() == nil {
		t.Skip("the generation file cannot be mapped here")
	}
	if err := os.Truncate(filepath.Join(f.dir, CanaryGenFile), 0); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.store.watch.gen.Load().load(); ok {
		t.Fatal("a read past the truncated file's end reported a generation")
	}
	if hand := f.appendByHand(); !f.seen(hand) {
		t.Fatal("with the generation unreadable, the scan did not look at the canary file")
	}
}

// A generation file deleted or replaced under a running gateway (a
// restore, a rename over it) is followed: the canaries issued after are
// recognised, within canaryStatEvery at most (the time a look takes to
// come round), and from then on at the next scan again.
func TestCanaryGenerationFileReplaced(t *testing.T) {
	defer func(d time.Duration) { canaryStatEvery = d }(canaryStatEvery)
	genFile := func(dir string) string { return filepath.Join(dir, CanaryGenFile) }
	for name, swap := range map[string]func(dir string) error{
		"deleted": func(dir string) error { return os.Remove(genFile(dir)) },
		"renamed over": func(dir string) error {
			if err := os.WriteFile(genFile(dir)+".tmp", make([]byte, 8), 0o600); err != nil {
				return err
			}
			return os.Rename(genFile(dir)+".tmp", genFile(dir))
		},
	} {
		t.Run(name, func(t *testing.T) {
			canaryStatEvery = 20 * time.Millisecond
			f := newCanaryFixture(t)
			f.issue()
			f.seen("nothing") // maps the generation file
			if err := swap(f.dir); err != nil {
				t.Fatal(err)
			}
			v := f.issue()
			for deadline := time.Now().Add(5 * time.Second); !f.seen(v); {
				if time.Now().After(deadline) {
					t.Fatal("a canary issued after the generation file was " + name + " was not recognised within 5 s")
				}
				time.Sleep(5 * time.Millisecond)
			}
			// Following the new file, the next scan after Issue knows the
			// next canary again, however long the look's period.
			canaryStatEvery = time.Hour
			f.seen("nothing")
			if next := f.issue(); !f.seen(next) {
				t.Fatal("after following the new generation file, a canary issued was not recognised by the next scan")
			}
		})
	}
}
