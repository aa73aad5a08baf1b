package scanner

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestFileScan(t *testing.T) {
	s := testScanner(t)
	dir := t.TempDir()
	secret := "token = " + MustFake(t, "github-pat") + "\n"
	for p, c := range map[string]string{
		"app/config.txt":  secret,
		"app/clean.txt":   "nothing to see\n",
		".git/objects/x":  secret, // history is not the working tree
		"big/huge.txt":    secret + strings.Repeat("x", 200),
		"app/nested/a.md": secret,
	} {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(c), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var files, skipped []string
	n, err := FileScan{MaxBytes: 150, Stdin: strings.NewReader(secret),
		Found:   func(name string, f Finding) { files = append(files, name) },
		Skipped: func(name string) { skipped = append(skipped, name) },
	}.Run(context.Background(), s, []string{dir, "-"})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(files)
	want := []string{"-", filepath.Join(dir, "app/config.txt"), filepath.Join(dir, "app/nested/a.md")}
	if n != len(files) || !slices.Equal(files, want) {
		t.Fatalf("found %d in %q, want %q", n, files, want)
	}
	if !slices.Equal(skipped, []string{filepath.Join(dir, "big/huge.txt")}) {
		t.Errorf("skipped %q, want the file over MaxBytes", skipped)
	}
	if _, err := (FileScan{}).Run(context.Background(), s, []string{filepath.Join(dir, "missing")}); err == nil {
		t.Error("a missing target is not an error")
	}
}
