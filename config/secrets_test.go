package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The references are read relative to the config file, files trimmed, and errors name
// the reference, never what it holds.
func TestSecretRefs(t *testing.T) {
	dir := t.TempDir()
	secret := "s3cret-" + strings.Repeat("q", 20)
	os.MkdirAll(filepath.Join(dir, "secrets"), 0o700)
	os.WriteFile(filepath.Join(dir, "secrets", "a.hash"), []byte("$argon2id$"+secret+"\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "secrets", "pass"), []byte(" "+secret+"\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "secrets", "hook"), []byte("https://hooks.example.test/"+secret+"\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "secrets", "nohook"), []byte(secret+"\n"), 0o600)
	env := map[string]string{"B_HASH": "$2a$" + secret, "HOOK": "http://hooks.example.test/x"}
	getenv := func(k string) string { return env[k] }
	c, err := Parse([]byte(`
ca: {passphrase_file: secrets/pass}
dashboard:
  users:
    - {name: a, role: admin, password_hash_file: secrets/a.hash}
    - {name: b, role: admin, password_hash_env: B_HASH}
    - {name: c, role: admin, password_hash_env: C_HASH}
    - {name: d, role: admin, password_hash_file: secrets/none}
alerts:
  webhooks:
    - {url_file: secrets/hook}
    - {url_env: HOOK}
    - {url_env: NO_HOOK}
    - {url_file: secrets/nohook}
`), filepath.Join(dir, "sluice.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	users := c.Dashboard.Users
	if h, err := c.DashboardHash(&users[0], getenv); err != nil || h != "$argon2id$"+secret {
		t.Errorf("hash from file: %q, %v", h, err)
	}
	if h, err := c.DashboardHash(&users[1], getenv); err != nil || h != env["B_HASH"] {
		t.Errorf("hash from env: %q, %v", h, err)
	}
	if p, err := c.CAPassphrase(); err != nil || string(p) != secret {
		t.Errorf("passphrase: %q, %v", p, err)
	}
	if u, err := c.WebhookURL(0, getenv); err != nil || u != "https://hooks.example.test/"+secret {
		t.Errorf("webhook from file: %q, %v", u, err)
	}
	if u, err := c.WebhookURL(1, getenv); err != nil || u != env["HOOK"] {
		t.Errorf("webhook from env: %q, %v", u, err)
	}
	bad := map[string]func() error{
		"empty hash env": func() error { _, err := c.DashboardHash(&users[2], getenv); return err },
		"no hash file":   func() error { _, err := c.DashboardHash(&users[3], getenv); return err },
		"empty hook env": func() error { _, err := c.WebhookURL(2, getenv); return err },
		"hook not a URL": func() error { _, err := c.WebhookURL(3, getenv); return err },
		"empty pass env": func() error {
			c := *c
			c.CA = CA{PassphraseEnv: "NO_PASS_TEST"}
			_, err := c.CAPassphrase()
			return err
		},
		"no pass file": func() error {
			c := *c
			c.CA = CA{PassphraseFile: "secrets/none"}
			_, err := c.CAPassphrase()
			return err
		},
	}
	for name, f := range bad {
		err := f()
		if err == nil {
			t.Errorf("%s: no error", name)
		} else if strings.Contains(err.Error(), secret) {
			t.Errorf("%s: the error holds the secret: %v", name, err)
		}
	}
	if p, err := (&Config{}).CAPassphrase(); p != nil || err != nil {
		t.Errorf("no passphrase configured: %q, %v", p, err)
	}
}

func TestAbsPath(t *testing.T) {
	c := &Config{Path: "/etc/sluice/sluice.yaml"}
	if got := c.AbsPath("secrets/a"); got != "/etc/sluice/secrets/a" {
		t.Errorf("AbsPath = %q", got)
	}
	if got := c.AbsPath("/abs/a"); got != "/abs/a" {
		t.Errorf("AbsPath of an absolute path = %q", got)
	}
	wd, _ := os.Getwd()
	if got := (&Config{}).AbsPath("a"); got != filepath.Join(wd, "a") {
		t.Errorf("AbsPath of the embedded default = %q, want it under %s", got, wd)
	}
	if got := c.AbsPath(""); got != "" {
		t.Errorf("AbsPath(\"\") = %q", got)
	}
}
