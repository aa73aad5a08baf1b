package scanner

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"testing"
)

func TestBuild(t *testing.T) {
	dir := t.TempDir()
	sc, err := Build(Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if sc.Key != nil {
		t.Fatal("a key without CreateKey")
	}
	if _, err := os.Stat(filepath.Join(dir, KeyFile)); err == nil {
		t.Fatal("Build created a key without CreateKey")
	}
	sc, err = Build(Options{DataDir: dir, CreateKey: true, MaxBodyBytes: 1 << 10})
	if err != nil || len(sc.Key) == 0 || sc.MaxBodyBytes != 1<<10 {
		t.Fatalf("with CreateKey: %v, key %d bytes", err, len(sc.Key))
	}
	again, err := Build(Options{DataDir: dir})
	if err != nil || string(again.Key) != string(sc.Key) {
		t.Fatal("an existing key is not read")
	}
	if _, err := Build(Options{DataDir: dir, RulePacks: []string{filepath.Join(dir, "none.toml")}}); err == nil {
		t.Fatal("a missing rule pack is no error")
	}
	bad := filepath.Join(dir, "bad.toml")
	os.WriteFile(bad, []byte("[[rules]\nid = \n"), 0o600) // not TOML
	if _, err := Build(Options{DataDir: dir, RulePacks: []string{bad}}); err == nil {
		t.Fatal("a bad rule pack is no error")
	}
	h := NewHolder(sc)
	h.Swap(again)
	if h.Current() != again {
		t.Fatal("Swap did not install the scanner")
	}
	if _, err := h.Scan(context.Background(), &Request{Host: "a.example.test", URL: &url.URL{Scheme: "https", Host: "a.example.test", Path: "/"}}); err != nil {
		t.Fatal(err)
	}
}

func TestCanaryEnvName(t *testing.T) {
	dir := t.TempDir()
	cs, err := IssueCanaries(dir, "acme", " run_1 ")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, KeyFile)); err != nil {
		t.Fatal("IssueCanaries made no key")
	}
	for _, c := range cs {
		if c.Run != "run_1" {
			t.Errorf("canary of run %q, want run_1", c.Run)
		}
		if c.EnvName() == "" {
			t.Errorf("canary kind %s has no variable", c.Kind)
		}
	}
}

type fakeCanaries struct{}

func (fakeCanaries) Canary(string) (string, bool) { return "", false }
func (fakeCanaries) Lengths() map[int]bool        { return nil }

// A reload's scanner keeps the running one's key and canaries: a rebuilt
// scanner with a fresh key would not recognise an issued canary.
func TestHolderRebuild(t *testing.T) {
	dir := t.TempDir()
	sc, err := Build(Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	sc.Key, sc.Canaries = []byte("fake-fingerprint-key-0123456789ab"), fakeCanaries{}
	next, err := NewHolder(sc).Rebuild(Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if string(next.Key) != string(sc.Key) || next.Canaries == nil || next == sc {
		t.Errorf("Rebuild: key %q, canaries %v", next.Key, next.Canaries)
	}
	if _, err := NewHolder(sc).Rebuild(Options{DataDir: dir, RulePacks: []string{filepath.Join(dir, "none.toml")}}); err == nil {
		t.Error("a bad rule pack is no error")
	}
	var none *Holder
	if fresh, err := none.Rebuild(Options{DataDir: dir}); err != nil || string(fresh.Key) == string(sc.Key) {
		t.Errorf("a nil Holder kept a key: %v", err)
	}
}
