package operatorconf

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-egress/sluice/config"
	"github.com/sluice-egress/sluice/dashboard"
)

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
		return DashboardUsers(cfg, func(k string) string { return env[k] })
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
