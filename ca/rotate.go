package ca

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"

	"github.com/sluice-egress/sluice/internal/fileutil"
)

// Rotate replaces the tenant's root with a new one. The old files are kept beside
// as ca.pem.<unix-time>.old and ca.key.<unix-time>.old; the old Authority stops
// signing (ErrRetired) and the tenant's cached leaves are dropped. Rotate also
// works when the files on disk are damaged, so it is the way to recover from that.
func (s *Store) Rotate(tenant string) (*Authority, error) {
	if err := ValidateTenant(tenant); err != nil {
		return nil, err
	}
	if err := s.init(); err != nil {
		return nil, err
	}
	m := s.tenantLock(tenant)
	m.Lock()
	defer m.Unlock()

	dir, certPath, keyPath := s.paths(tenant)
	a, certPEM, keyPEM, err := s.generate(tenant)
	if err != nil {
		return nil, err
	}
	if err := mkdirPrivate(s.Dir); err != nil {
		return nil, fmt.Errorf("ca: rotate %q: %w", tenant, err)
	}
	if err := mkdirPrivate(dir); err != nil {
		return nil, fmt.Errorf("ca: rotate %q: %w", tenant, err)
	}
	keyTmp, err := fileutil.WriteTemp(keyPath, keyPEM, 0o600)
	if err != nil {
		return nil, fmt.Errorf("ca: rotate %q: write key: %w", tenant, err)
	}
	defer os.Remove(keyTmp) // no-op once renamed
	certTmp, err := fileutil.WriteTemp(certPath, certPEM, 0o644)
	if err != nil {
		return nil, fmt.Errorf("ca: rotate %q: write certificate: %w", tenant, err)
	}
	defer os.Remove(certTmp)

	// Keep the old pair under a name nobody else uses; hard links leave the live
	// files in place until the new ones replace them atomically.
	for ts := s.now().Unix(); ; ts++ {
		suffix := "." + strconv.FormatInt(ts, 10) + ".old"
		c, err1 := exists(certPath + suffix)
		k, err2 := exists(keyPath + suffix)
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("ca: rotate %q: %w", tenant, err)
		}
		if c || k {
			continue
		}
		for _, p := range []string{keyPath, certPath} {
			if err := os.Link(p, p+suffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("ca: rotate %q: keep old %s: %w", tenant, p, err)
			}
		}
		break
	}
	if err := os.Rename(keyTmp, keyPath); err != nil {
		return nil, fmt.Errorf("ca: rotate %q: %w", tenant, err)
	}
	if err := os.Rename(certTmp, certPath); err != nil {
		return nil, fmt.Errorf("ca: rotate %q: %w (%s is new, %s still old: restore from the .old files)", tenant, err, keyPath, certPath)
	}
	fileutil.SyncDir(dir)

	s.mu.Lock()
	old := s.auths[tenant]
	s.auths[tenant] = a
	s.mu.Unlock()
	if old != nil {
		old.retired.Store(true)
	}
	s.purgeTenant(tenant)
	s.logger().Info("ca: rotated tenant CA", logTenant, tenant, logPath, certPath, logFingerprint, a.Fingerprint())
	return a, nil
}
