package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/sluice-egress/sluice/dashboard"
)

// runUserHash is `sluice user hash [--bcrypt]`: it reads a password from
// the first line of stdin and prints its hash (argon2id by default) for a
// dashboard user's password_hash_file or password_hash_env.
func runUserHash(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("user hash", stderr)
	useBcrypt := fs.Bool("bcrypt", false, "print a bcrypt hash instead of argon2id")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	line, err := bufio.NewReader(io.LimitReader(stdin, 4096)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("user hash: read the password from stdin: %w", err)
	}
	password := strings.TrimRight(line, "\r\n")
	if password == "" {
		return errors.New("user hash: no password on stdin (pipe it in: printf '%s\\n' \"$PW\" | sluice user hash)")
	}
	h, err := dashboard.NewPasswordHash(password, *useBcrypt)
	if errors.Is(err, dashboard.ErrBcryptTooLong) {
		return fmt.Errorf("user hash: %w (without --bcrypt)", err)
	} else if err != nil {
		return fmt.Errorf("user hash: %w", err)
	}
	fmt.Fprintln(stdout, h)
	return nil
}
