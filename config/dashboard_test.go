package config

import (
	"strings"
	"testing"
	"time"
)

func TestDashboardConfig(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		wantTTL time.Duration
		wantErr string // "" for none; else a substring of the error
	}{
		{"absent: defaults", "version: 1\n", 12 * time.Hour, ""},
		{"users", "dashboard:\n  session_ttl: 1d\n  users:\n" +
			"    - {name: alice, role: admin, password_hash_file: secrets/alice.hash}\n" +
			"    - {name: bob@example.test, role: reviewer, password_hash_env: BOB_HASH}\n" +
			"    - {name: carol, role: viewer, password_hash_env: CAROL_HASH}\n", 24 * time.Hour, ""},
		{"ttl too short", "dashboard:\n  session_ttl: 1m\n", 0, "sluice.yaml:2: dashboard.session_ttl: 1m0s is out of range"},
		{"ttl too long", "dashboard:\n  session_ttl: 90d\n", 0, "dashboard.session_ttl: 90d is out of range"},
		{"ttl bad", "dashboard:\n  session_ttl: soon\n", 0, "sluice.yaml:2: dashboard.session_ttl: bad period"},
		{"inline password", "dashboard:\n  users:\n    - {name: a, role: admin, password: hunter2}\n", 0, "dashboard.users[0].password"},
		{"inline hash", "dashboard:\n  users:\n    - {name: a, role: admin, password_hash: \"$2a$10$x\"}\n", 0, "dashboard.users[0].password_hash"},
		{"no hash", "dashboard:\n  users:\n    - {name: a, role: admin}\n", 0, "sluice.yaml:3: dashboard.users[0]: set password_hash_file or password_hash_env"},
		{"both", "dashboard:\n  users:\n    - {name: a, role: admin, password_hash_file: f, password_hash_env: E}\n", 0, "not both"},
		{"bad env", "dashboard:\n  users:\n    - {name: a, role: admin, password_hash_env: \"$2a$10$abc\"}\n", 0, "bad environment variable name"},
		{"bad role", "dashboard:\n  users:\n    - {name: a, role: root, password_hash_env: A}\n", 0, "dashboard.users[0].role: bad role \"root\""},
		{"tenant role", "dashboard:\n  users:\n    - {name: a, role: tenant, password_hash_env: A}\n", 0, "bad role \"tenant\""},
		{"no role", "dashboard:\n  users:\n    - {name: a, password_hash_env: A}\n", 0, "bad role \"\""},
		{"bad name", "dashboard:\n  users:\n    - {name: \"a b\", role: admin, password_hash_env: A}\n", 0, "bad user name"},
		{"empty name", "dashboard:\n  users:\n    - {role: admin, password_hash_env: A}\n", 0, "bad user name \"\""},
		{"duplicate", "dashboard:\n  users:\n    - {name: a, role: admin, password_hash_env: A}\n    - {name: a, role: viewer, password_hash_env: B}\n",
			0, "sluice.yaml:4: dashboard.users[1].name: duplicate user \"a\""},
		{"unknown key", "dashboard:\n  admins: [a]\n", 0, "sluice.yaml:2: dashboard.admins"},
		{"users not a list", "dashboard:\n  users: {a: admin}\n", 0, "dashboard.users"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.yaml), "sluice.yaml")
			if err == nil {
				err = c.Validate()
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := time.Duration(c.Dashboard.SessionTTL); got != tc.wantTTL {
				t.Fatalf("session_ttl %v, want %v", got, tc.wantTTL)
			}
		})
	}
}
