package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"

	"github.com/sluice-egress/sluice/rules"
)

// tenantNameRE is what NewTokenFile accepts as a tenant name: a YAML key and a
// proxy user name without quoting.
var tenantNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// ErrTenantName: a tenant name NewTokenFile refuses (it would need quoting, or
// name a path).
var ErrTenantName = errors.New("want letters, digits and ._-, at most 64")

// NewTokenFile writes a fresh token for tenant to path (default TENANT.token),
// a new 0600 file, or with replace one renamed over the old file (whose token
// stops working on the next reload), and returns the path: the file a
// tenant's token_file names, as Token reads it. The token is not returned.
func NewTokenFile(tenant, path string, replace bool) (string, error) {
	if !tenantNameRE.MatchString(tenant) {
		return "", fmt.Errorf("tenant %q: %w", tenant, ErrTenantName)
	}
	if path == "" {
		path = tenant + ".token"
	}
	tok, err := rules.NewToken()
	if err != nil {
		return "", err
	}
	return path, writeSecretFile(path, []byte(tok+"\n"), replace)
}

// writeSecretFile writes b to path with mode 0600: a new file, or with
// replace a temporary file renamed over the old one (never a moment with
// the secret in a file others may read).
func writeSecretFile(path string, b []byte, replace bool) error {
	if !replace {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s exists: pass --force to replace it", path)
		}
		if err != nil {
			return fmt.Errorf("token: %w", err)
		}
		if _, err := f.Write(b); err != nil {
			f.Close()
			os.Remove(path)
			return fmt.Errorf("token: write %s: %w", path, err)
		}
		return f.Close()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".token-*") // 0600
	if err != nil {
		return fmt.Errorf("token: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("token: write: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("token: write: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("token: %w", err)
	}
	return nil
}
