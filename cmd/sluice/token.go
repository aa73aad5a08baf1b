package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/sluice-egress/sluice/config"
)

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
	path, err := config.NewTokenFile(*tenant, *out, *force)
	if errors.Is(err, config.ErrTenantName) {
		return fmt.Errorf("%w: --tenant %q: %w", errUsage, *tenant, config.ErrTenantName)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote a new token for tenant %s to %s (mode 0600)\n", *tenant, path)
	fmt.Fprintf(stdout, "in the config:  tenants: {%s: {token_file: %s}}\n", *tenant, path)
	fmt.Fprintf(stdout, "for the API:    Authorization: Bearer %s:$(cat %s)\n", *tenant, path)
	return nil
}
