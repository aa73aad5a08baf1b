package config

import (
	"fmt"
	"regexp"
	"time"
)

// Dashboard session lifetimes.
const (
	DefaultSessionTTL = Period(12 * time.Hour)
	MinSessionTTL     = Period(5 * time.Minute)
	MaxSessionTTL     = Period(30 * 24 * time.Hour)
)

// Dashboard roles a config user may hold (tenants use their tenant token).
const (
	DashboardViewer   = "viewer"
	DashboardReviewer = "reviewer"
	DashboardAdmin    = "admin"
)

// Dashboard configures who may log in to the dashboard and call the
// API as staff.
type Dashboard struct {
	// Users who may log in. None: only tenant tokens reach the API, and
	// nobody the pages.
	Users []DashboardUser `yaml:"users"`
	// SessionTTL is a login session's lifetime; default DefaultSessionTTL,
	// between MinSessionTTL and MaxSessionTTL.
	SessionTTL Period `yaml:"session_ttl"`
}

// DashboardUser is one dashboard user. The password hash (bcrypt or
// argon2id PHC, from `sluice user hash`) is referenced, never written here.
type DashboardUser struct {
	Name string `yaml:"name"`
	// Role is DashboardViewer, DashboardReviewer or DashboardAdmin.
	Role string `yaml:"role"`
	// Tenant, when set, scopes the user to one tenant: the dashboard and the
	// API show it that tenant's incidents, runs and requests only.
	Tenant string `yaml:"tenant"`
	// PasswordHashFile holds the hash (relative to the config file); exactly
	// one of PasswordHashFile and PasswordHashEnv.
	PasswordHashFile string `yaml:"password_hash_file"`
	// PasswordHashEnv names the environment variable holding the hash.
	PasswordHashEnv string `yaml:"password_hash_env"`
}

// userRE is a user name: letters, digits and ._@- , at most 64.
var userRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$`)

func (v *validator) dashboard() {
	d := &v.c.Dashboard
	if t := d.SessionTTL; t < MinSessionTTL || t > MaxSessionTTL {
		v.fail("dashboard.session_ttl", "%s is out of range: between %s and %s, such as 12h", t, MinSessionTTL, MaxSessionTTL)
	}
	seen := map[string]bool{}
	for i := range d.Users {
		u := &d.Users[i]
		key := fmt.Sprintf("dashboard.users[%d]", i)
		switch {
		case !userRE.MatchString(u.Name):
			v.fail(key+".name", "bad user name %q: want letters, digits and ._@-, at most 64", u.Name)
		case seen[u.Name]:
			v.fail(key+".name", "duplicate user %q", u.Name)
		}
		seen[u.Name] = true
		switch u.Role {
		case DashboardViewer, DashboardReviewer, DashboardAdmin:
		default:
			v.fail(key+".role", "bad role %q: want viewer, reviewer or admin", u.Role)
		}
		if _, ok := v.c.Tenants[u.Tenant]; u.Tenant != "" && !ok {
			v.fail(key+".tenant", "unknown tenant %q: a tenant-scoped user needs a tenant under tenants:", u.Tenant)
		}
		switch {
		case u.PasswordHashFile == "" && u.PasswordHashEnv == "":
			v.fail(key, "set password_hash_file or password_hash_env (make the hash with `sluice user hash`)")
		case u.PasswordHashFile != "" && u.PasswordHashEnv != "":
			v.fail(key+".password_hash_env", "set password_hash_file or password_hash_env, not both")
		case u.PasswordHashEnv != "" && !envRE.MatchString(u.PasswordHashEnv):
			v.fail(key+".password_hash_env", "bad environment variable name %q", u.PasswordHashEnv)
		}
	}
}

//END
