package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-egress/sluice/config"
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

func TestDashboardUsers(t *testing.T) {
	dir := t.TempDir()
	hash, _ := dashboard.HashPassword("a long passphrase")
	os.WriteFile(filepath.Join(dir, "ada.hash"), []byte(hash+"\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "bad.hash"), []byte("hunter2\n"), 0o600)
	load := func(yaml string, env map[string]string) ([]dashboard.User, error) {
		t.Helper()
		cfg, err := config.Parse([]byte(yaml), filepath.Join(dir, "sluice.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		return dashboardUsers(cfg, func(k string) string { return env[k] })
	}
	users, err := load("dashboard:\n  users:\n    - {name: ada, role: admin, password_hash_file: ada.hash}\n"+
		"    - {name: rex, role: reviewer, password_hash_env: REX_HASH}\n", map[string]string{"REX_HASH": hash})
	if err != nil || len(users) != 2 || users[0].Role != dashboard.RoleAdmin || users[1].Hash != hash || users[0].Hash != hash {
		t.Fatalf("%+v %v", users, err)
	}
	for name, tc := range map[string]struct{ yaml, want string }{
		"missing file": {"dashboard:\n  users:\n    - {name: ada, role: admin, password_hash_file: nope.hash}\n", "dashboard user ada: password hash"},
		"empty env":    {"dashboard:\n  users:\n    - {name: rex, role: admin, password_hash_env: REX_NONE}\n", "REX_NONE is empty"},
		"not a hash":   {"dashboard:\n  users:\n    - {name: bad, role: admin, password_hash_file: bad.hash}\n", "neither bcrypt nor argon2id"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := load(tc.yaml, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Fatal("the error shows the file's content")
			}
		})
	}
}
