package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

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

// Period is a duration written in YAML with a day or week unit ("90d",
// "2w") or as a Go duration ("36h").
type Period time.Duration

// ParsePeriod parses "90d", "2w" or a Go duration such as "36h"; negative
// periods are refused.
func ParsePeriod(s string) (Period, error) {
	t := strings.TrimSpace(s)
	bad := fmt.Errorf("bad period %q: want days (90d), weeks (2w) or a duration such as 36h", s)
	unit := time.Duration(0)
	switch {
	case strings.HasSuffix(t, "d"):
		unit = 24 * time.Hour
	case strings.HasSuffix(t, "w"):
		unit = 7 * 24 * time.Hour
	}
	if unit != 0 {
		n, err := strconv.ParseInt(t[:len(t)-1], 10, 64)
		if err != nil || n < 0 || t[0] == '+' {
			return 0, bad
		}
		if n > math.MaxInt64/int64(unit) {
			return 0, fmt.Errorf("bad period %q: too long", s)
		}
		return Period(time.Duration(n) * unit), nil
	}
	d, err := time.ParseDuration(t)
	if err != nil || d < 0 {
		return 0, bad
	}
	return Period(d), nil
}

// String formats the period in days when it is whole days ("90d").
func (p Period) String() string {
	d := time.Duration(p)
	if d != 0 && d%(24*time.Hour) == 0 {
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	}
	return d.String()
}

// UnmarshalYAML implements yaml.Unmarshaler.
func (p *Period) UnmarshalYAML(n *yaml.Node) error {
	return unmarshalScalar(n, p, "a period such as 90d", ParsePeriod)
}

// MarshalYAML implements yaml.Marshaler.
func (p Period) MarshalYAML() (any, error) { return p.String(), nil }

func (v *validator) storeConfig() {
	if r := v.c.Store.Retention; r < MinRetention {
		v.fail("store.retention", "%s is too short: keep incidents at least %s, such as 90d", r, MinRetention)
	}
}
