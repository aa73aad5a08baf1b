package derive

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Bounds of what ReadManifests returns: below the runs API's limits on a request
// (4 MiB of body, 200 manifests), so that a client can send it whole.
const (
	MaxReadManifest = 2 << 20 // bytes of one manifest; larger ones are left out
	MaxReadTotal    = 3 << 20 // bytes of all manifests together
	MaxReadFiles    = 200
	MaxReadDepth    = 8 // directories a manifest may lie in, below the root
)

// ReadManifests returns the manifests Derive reads under dir, by slash-separated path
// relative to dir, for clients that send them to the runs API instead of the whole
// tree. It skips what Derive skips and stays within the bounds above, smaller files
// first: lock files are the large ones and the least needed. Files that cannot be
// read are left out; only an unreadable dir is an error.
func ReadManifests(dir string) (map[string]string, error) {
	type file struct {
		rel  string
		size int64
	}
	var files []file
	root := filepath.Clean(dir)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root {
				return err
			}
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if p != root && (SkipDir(d.Name()) || strings.Count(rel, "/") >= MaxReadDepth) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !IsManifest(rel) {
			return nil
		}
		if info, err := d.Info(); err == nil && info.Size() <= MaxReadManifest {
			files = append(files, file{rel, info.Size()})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(files, func(i, j int) bool { return files[i].size < files[j].size })
	out := map[string]string{}
	var total int64
	for _, f := range files {
		if total+f.size > MaxReadTotal || len(out) >= MaxReadFiles {
			break
		}
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f.rel)))
		if err != nil {
			continue
		}
		out[f.rel] = string(b)
		total += int64(len(b))
	}
	return out, nil
}

// ErrNotDir: DeriveDir's repository is not a directory.
var ErrNotDir = errors.New("not a directory")

// DeriveDir is Derive on the repository checked out in dir ("" for none) with its
// remote; nil when there is neither.
func DeriveDir(dir, remote string) (*Derivation, error) {
	if dir == "" && remote == "" {
		return nil, nil
	}
	var fsys fs.FS
	if dir != "" {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("%s: %w", dir, ErrNotDir)
		}
		fsys = os.DirFS(dir)
	}
	return Derive(fsys, remote)
}
