package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/sluice-egress/sluice/dashboard"
)

func TestUserHash(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		stdin   string
		prefix  string
		wantErr string
	}{
		{"argon2id", nil, "a long passphrase\n", "$argon2id$", ""},
		{"bcrypt", []string{"--bcrypt"}, "a long passphrase\r\n", "$2a$12$", ""},
		{"no newline", nil, "a long passphrase", "$argon2id$", ""},
		{"empty", nil, "", "", "no password on stdin"},
		{"short", nil, "pw12345\n", "", "shorter than 8"},
		{"bcrypt too long", []string{"--bcrypt"}, strings.Repeat("x", 73) + "\n", "", "72 bytes"},
		{"argument", []string{"extra"}, "a long passphrase\n", "", "unexpected argument"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			err := runUserHash(tc.args, strings.NewReader(tc.stdin), &out, &errb)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), strings.TrimSpace(tc.stdin)) && tc.stdin != "" {
					t.Fatal("the error repeats the password")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			h := strings.TrimSpace(out.String())
			if !strings.HasPrefix(h, tc.prefix) || strings.Contains(h, "passphrase") {
				t.Fatalf("hash %q", h)
			}
			if !dashboard.CheckPassword(h, "a long passphrase") || dashboard.CheckPassword(h, "a long passphrasE") {
				t.Fatal("the hash does not check")
			}
		})
	}
}
