package config

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// The config references secrets by file or environment variable; the methods here
// read them for the components that need them. Their errors name the reference,
// never the secret.

// readRef reads the secret that a file (a resolved path) or an environment variable
// holds; "" when neither is set. The file's content is trimmed; the variable's is not.
func readRef(file, env string, getenv func(string) string) (string, error) {
	switch {
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return "", err
		}
		return strings.TrimSpace(string(b)), nil
	case env != "":
		return getenv(env), nil
	}
	return "", nil
}

// AbsPath makes p absolute against the config file's directory (the working
// directory for the embedded default); "" stays "".
func (c *Config) AbsPath(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	base := "."
	if c.Path != "" {
		base = filepath.Dir(c.Path)
	}
	abs, err := filepath.Abs(filepath.Join(base, p))
	if err != nil {
		return filepath.Join(base, p)
	}
	return abs
}

// CAPassphrase reads the passphrase that encrypts the CA keys: nil when the config
// sets none (keys are stored unencrypted).
func (c *Config) CAPassphrase() ([]byte, error) {
	v, err := readRef(c.AbsPath(c.CA.PassphraseFile), c.CA.PassphraseEnv, os.Getenv)
	switch {
	case err != nil:
		return nil, fmt.Errorf("ca passphrase_file: %w", err)
	case c.CA.PassphraseFile != "":
		return []byte(v), nil
	case c.CA.PassphraseEnv != "" && v == "":
		return nil, fmt.Errorf("ca passphrase_env: %s is empty", c.CA.PassphraseEnv)
	case c.CA.PassphraseEnv != "":
		return []byte(v), nil
	}
	return nil, nil
}

// WebhookURL reads the URL of alerts.webhooks[i] from its url_env or url_file and
// checks that it is an http(s) URL.
func (c *Config) WebhookURL(i int, getenv func(string) string) (string, error) {
	w := c.Alerts.Webhooks[i]
	key := fmt.Sprintf("alerts.webhooks[%d]", i)
	raw, err := readRef(c.AbsPath(w.URLFile), w.URLEnv, getenv)
	switch {
	case err != nil:
		return "", fmt.Errorf("%s: url_file: %w", key, err)
	case w.URLEnv != "" && raw == "":
		return "", fmt.Errorf("%s: environment variable %s is empty", key, w.URLEnv)
	}
	raw = strings.TrimSpace(raw)
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return "", fmt.Errorf("%s: the URL it references is not an http(s) URL", key)
	}
	return raw, nil
}

// DashboardHash reads a dashboard user's password hash from its file or
// environment variable, trimmed.
func (c *Config) DashboardHash(u *DashboardUser, getenv func(string) string) (string, error) {
	h, err := readRef(c.AbsPath(u.PasswordHashFile), u.PasswordHashEnv, getenv)
	switch {
	case err != nil:
		return "", fmt.Errorf("dashboard user %s: password hash: %w", u.Name, err)
	case u.PasswordHashFile == "" && h == "":
		return "", fmt.Errorf("dashboard user %s: environment variable %s is empty", u.Name, u.PasswordHashEnv)
	}
	return strings.TrimSpace(h), nil
}
