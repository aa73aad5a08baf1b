package config

import "time"

// DefaultRetention is how long incidents are kept when store.retention is absent.
const DefaultRetention = Period(90 * 24 * time.Hour)

// MinRetention is the shortest retention accepted: shorter would prune
// incidents before anyone could triage them.
const MinRetention = Period(time.Hour)

// Store configures the incident store (DataDir/sluice.db).
type Store struct {
	// Retention: incidents older than this are pruned; default DefaultRetention,
	// at least MinRetention.
	Retention Period `yaml:"retention"`
}

func (v *validator) storeConfig() {
	if r := v.c.Store.Retention; r < MinRetention {
		v.fail("store.retention", "%s is too short: keep incidents at least %s, such as 90d", r, MinRetention)
	}
}
