package derive

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadManifests(t *testing.T) {
	dir := t.TempDir()
	deep := strings.Repeat("d/", MaxReadDepth+1) + "package.json"
	for p, c := range map[string]string{
		"package.json":                  "{}",
		"svc/go.mod":                    "module x\n",
		"README.md":                     "not a manifest",
		"node_modules/dep/package.json": "{}",
		".git/config":                   "[core]\n",
		deep:                            "{}",
		"big/package-lock.json":         strings.Repeat("x", MaxReadManifest+1),
	} {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755)
		os.WriteFile(filepath.Join(dir, p), []byte(c), 0o644)
	}
	m, err := ReadManifests(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 2 || m["package.json"] != "{}" || m["svc/go.mod"] != "module x\n" {
		t.Fatalf("manifests %v", keys(m))
	}
	if _, err := ReadManifests(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("a missing directory is no error")
	}
}

// The total bound keeps the smaller files.
func TestReadManifestsTotal(t *testing.T) {
	dir := t.TempDir()
	half := strings.Repeat("x", MaxReadTotal/2+1)
	for _, p := range []string{"a/package-lock.json", "b/package-lock.json"} {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755)
		os.WriteFile(filepath.Join(dir, p), []byte(half), 0o644)
	}
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module x\n"), 0o644)
	m, err := ReadManifests(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 2 || m["go.mod"] == "" {
		t.Fatalf("manifests %v: want go.mod and one lock file", keys(m))
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestDeriveDir(t *testing.T) {
	if d, err := DeriveDir("", ""); d != nil || err != nil {
		t.Fatalf("no repository: %v, %v", d, err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	os.WriteFile(file, nil, 0o600)
	if _, err := DeriveDir(file, ""); !errors.Is(err, ErrNotDir) {
		t.Fatalf("a file: %v, want ErrNotDir", err)
	}
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module x\n"), 0o644)
	d, err := DeriveDir(dir, "")
	if err != nil || d == nil || len(d.Presets) == 0 {
		t.Fatalf("a Go module: %+v, %v", d, err)
	}
}
