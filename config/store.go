package config

import (
	"fmt"
	"os"
	"strings"
	"time"
)

// DefaultRetention is how long incidents are kept when store.retention is absent.
const DefaultRetention = Period(90 * 24 * time.Hour)

// MinRetention is the shortest retention accepted: shorter would prune
// incidents before anyone could triage them.
const MinRetention = Period(time.Hour)

// DefaultIncidentTimeout is store.incident_timeout when absent: how long a refused
// request waits for its incident to be committed. Long enough for a batch behind a busy
// disk, short enough that a stalled store refuses requests (fail closed) instead of
// hanging them.
const DefaultIncidentTimeout = Duration(2 * time.Second)

// Bounds of store.incident_timeout.
const (
	MinIncidentTimeout = 100 * time.Millisecond
	MaxIncidentTimeout = time.Minute
)

// Store drivers.
const (
	// StoreSQLite keeps the store in DataDir/sluice.db: one node, nothing to run beside it.
	StoreSQLite = "sqlite"
	// StorePostgres keeps it in PostgreSQL, shared by several replicas.
	StorePostgres = "postgres"
)

// Store configures the incident store.
type Store struct {
	// Retention: incidents older than this are pruned; default DefaultRetention,
	// at least MinRetention.
	Retention Period `yaml:"retention"`
	// Driver is StoreSQLite (empty: the default) or StorePostgres.
	Driver string `yaml:"driver"`
	// DSNFile holds the PostgreSQL connection string (a libpq "host=… dbname=…"
	// string or a postgres:// URL; it may carry a password, so it is only ever
	// referenced). Exactly one of DSNFile and DSNEnv with StorePostgres, neither
	// with SQLite. Relative to the config file's directory.
	DSNFile string `yaml:"dsn_file"`
	// DSNEnv names the environment variable holding the connection string.
	DSNEnv string `yaml:"dsn_env"`
	// IncidentTimeout bounds the wait for an incident's commit: past it the request is
	// refused as unrecorded (fail closed). Default DefaultIncidentTimeout; 100ms to 1m.
	IncidentTimeout Duration `yaml:"incident_timeout"`
}

func (v *validator) storeConfig() {
	st := v.c.Store
	if r := st.Retention; r < MinRetention {
		v.fail("store.retention", "%s is too short: keep incidents at least %s, such as 90d", r, MinRetention)
	}
	switch st.Driver {
	case "", StoreSQLite:
		for key, val := range map[string]string{"store.dsn_file": st.DSNFile, "store.dsn_env": st.DSNEnv} {
			if val != "" {
				v.fail(key, "is for store.driver: postgres; SQLite lives in data_dir")
			}
		}
	case StorePostgres:
		if (st.DSNFile == "") == (st.DSNEnv == "") {
			v.fail("store.driver", "postgres needs exactly one of dsn_file and dsn_env (the DSN is never written in the config)")
		}
	default:
		v.fail("store.driver", "unknown driver %q (want sqlite or postgres)", st.Driver)
	}
}

// StoreDSN reads the PostgreSQL connection string from store.dsn_file or
// store.dsn_env, trimmed. Errors name where it was looked for, never what
// it holds.
func (c *Config) StoreDSN() (string, error) {
	st := c.Store
	var dsn, src string
	switch {
	case st.DSNEnv != "":
		src = "store.dsn_env " + st.DSNEnv
		dsn = os.Getenv(st.DSNEnv)
	case st.DSNFile != "":
		p := c.ResolvePath(st.DSNFile)
		src = "store.dsn_file " + p
		b, err := os.ReadFile(p)
		if err != nil {
			return "", fmt.Errorf("%s: %w", src, err)
		}
		dsn = string(b)
	default:
		return "", fmt.Errorf("store: no dsn_file or dsn_env")
	}
	if dsn = strings.TrimSpace(dsn); dsn == "" {
		return "", fmt.Errorf("%s: empty", src)
	}
	return dsn, nil
}
