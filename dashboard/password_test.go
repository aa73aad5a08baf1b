package dashboard

import (
	"errors"
	"strings"
	"testing"
)

func TestNewPasswordHash(t *testing.T) {
	tests := []struct {
		name, password string
		bcrypt         bool
		prefix         string // "": an error
	}{
		{"argon2id", "a long passphrase", false, "$argon2id$v=19$"},
		{"bcrypt", "a long passphrase", true, "$2a$12$"},
		{"long argon2id", strings.Repeat("x", 100), false, "$argon2id$"},
		{"empty", "", false, ""},
		{"short", "pw12345", false, ""},
		{"bcrypt too long", strings.Repeat("x", 73), true, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, err := NewPasswordHash(tc.password, tc.bcrypt)
			if tc.prefix == "" {
				if err == nil {
					t.Fatalf("hash %q, want an error", h)
				}
				if tc.password != "" && strings.Contains(err.Error(), tc.password) {
					t.Fatalf("the error holds the password: %v", err)
				}
				return
			}
			if err != nil || !strings.HasPrefix(h, tc.prefix) {
				t.Fatalf("hash %q, %v; want prefix %s", h, err, tc.prefix)
			}
			if !CheckPassword(h, tc.password) || CheckPassword(h, tc.password+"x") {
				t.Fatal("the hash does not check the password it was made from, and only it")
			}
		})
	}
	if _, err := NewPasswordHash(strings.Repeat("x", 73), true); !errors.Is(err, ErrBcryptTooLong) {
		t.Fatalf("err = %v, want ErrBcryptTooLong", err)
	}
}
