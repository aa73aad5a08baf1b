//go:build unix

package scanner

import (
	"os"
	"path/filepath"
	"syscall"
)

// mapCanaryGen maps dir's generation file (creating it, 8 zero bytes, when
// missing); nil when it cannot.
func mapCanaryGen(dir string) *canaryGen {
	f, err := os.OpenFile(filepath.Join(dir, CanaryGenFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil
	}
	defer f.Close()
	// Truncate, not write: it extends a short file with zeros and keeps the
	// bytes an issuer wrote meanwhile.
	st, err := f.Stat()
	if err != nil || st.Size() < 8 && f.Truncate(8) != nil {
		return nil
	}
	b, err := syscall.Mmap(int(f.Fd()), 0, 8, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil
	}
	return &canaryGen{b: b, info: st}
}
