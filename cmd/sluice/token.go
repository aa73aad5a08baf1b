package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"

	"github.com/sluice-egress/sluice/rules"
)

// tenantNameRE is what `token new` accepts as a tenant name: a YAML key
// and a proxy user name without quoting.
var tenantNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// runTokenNew writes a fresh tenant token to a new 0600 file and says how
// the config refers to it. The token itself is never printed.
func runTokenNew(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("token new", stderr)
	tenant := fs.String("tenant", "", "the tenant the token is for (required)")
	out := fs.String("out", "", "file to write (default: TENANT.token); it must not exist unless --force")
	force := fs.Bool("force", false, "replace an existing file (the old token stops working on the next reload)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if !tenantNameRE.MatchString(*tenant) {
		return fmt.Errorf("%w: --tenant %q: want letters, digits and ._-, at most 64", errUsage, *tenant)
	}
	path := *out
	if path == "" {
		path = *tenant + ".token"
	}
	tok, err := rules.NewToken()
	if err != nil {
		return err
	}
	if err := writeSecretFile(path, []byte(tok+"\n"), *force); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote a new token for tenant %s to %s (mode 0600)\n", *tenant, path)
	fmt.Fprintf(stdout, "in the config:  tenants: {%s: {token_file: %s}}\n", *tenant, path)
	fmt.Fprintf(stdout, "for the API:    Authorization: Bearer %s:$(cat %s)\n", *tenant, path)
	return nil
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
