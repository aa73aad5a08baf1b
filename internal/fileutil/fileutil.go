// Package fileutil writes files so that readers see the old content or the
// new, never a partial file, and never under a looser mode than asked.
package fileutil

import (
	"os"
	"path/filepath"
)

// WriteFile writes data to a temporary file beside path and renames it into
// place: a crash or a concurrent reader never sees half a file. The file has
// mode perm from its creation (a key written 0600 is never readable by
// others, not even for a moment); the rename is made durable where the
// system allows it.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	tmp, err := WriteTemp(path, data, perm)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	SyncDir(filepath.Dir(path))
	return nil
}

// WriteTemp writes data, synced, with mode perm to a new temporary file in
// path's directory and returns its name, for callers that rename several
// files into place together (the caller removes it if it does not rename it).
func WriteTemp(path string, data []byte, perm os.FileMode) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return "", err
	}
	name := f.Name()
	err = f.Chmod(perm) // before writing: the content is never visible under a looser mode
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(name)
		return "", err
	}
	return name, nil
}

// SyncDir makes a rename in dir durable; failure only weakens durability, so
// it is ignored.
func SyncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
}
