package apiclient

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// Environment variables of the CLI's API commands. Credentials come from the
// environment, never from argv (which every user of the host can read).
const (
	EnvAdmin    = "SLUICE_ADMIN"    // the admin listener's URL
	EnvToken    = "SLUICE_TOKEN"    // a tenant token ("token" with a tenant, or "tenant:token")
	EnvUser     = "SLUICE_USER"     // a dashboard user, with SLUICE_PASSWORD
	EnvPassword = "SLUICE_PASSWORD" // a variable name, not a secret
)

// ErrUsage marks a client that cannot be set up from what the caller gave: the
// command line or the environment must change (the CLI exits 2, with its usage).
var ErrUsage = errors.New("usage")

// FromEnv returns the client of the admin listener at admin (empty: $SLUICE_ADMIN,
// then fallback) with the credentials in the environment: a tenant
// token in $SLUICE_TOKEN (of tenant, unless it reads "tenant:token"), or a
// dashboard user in $SLUICE_USER and $SLUICE_PASSWORD. Its errors wrap ErrUsage
// and never hold a credential.
func FromEnv(admin, fallback, tenant string, getenv func(string) string) (*Client, error) {
	if admin == "" {
		admin = getenv(EnvAdmin)
	}
	if admin == "" {
		admin = fallback
	}
	u, err := url.Parse(admin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: --admin: want the admin listener's URL, such as http://127.0.0.1:8080", ErrUsage)
	}
	if u.User != nil {
		return nil, fmt.Errorf("%w: --admin: no credentials in the URL; set %s or %s/%s", ErrUsage, EnvToken, EnvUser, EnvPassword)
	}
	c := &Client{Base: u}
	tok, user := getenv(EnvToken), getenv(EnvUser)
	switch {
	case tok != "":
		cred := tok
		if !strings.Contains(tok, ":") {
			if tenant == "" {
				return nil, fmt.Errorf("%w: %s holds a tenant token: name its tenant with --tenant", ErrUsage, EnvToken)
			}
			cred = tenant + ":" + tok
		}
		c.Auth = func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+cred) }
	case user != "":
		pw := getenv(EnvPassword)
		c.Auth = func(r *http.Request) { r.SetBasicAuth(user, pw) }
	default:
		return nil, fmt.Errorf("%w: set %s (a tenant token) or %s and %s (a dashboard user)", ErrUsage, EnvToken, EnvUser, EnvPassword)
	}
	return c, nil
}
