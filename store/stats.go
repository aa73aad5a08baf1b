package store

import (
	"context"
	"fmt"
	"time"

	"github.com/sluice-egress/sluice/incident"
)

// TimeCount is the number of incidents of one kind for one tenant in the
// bucket starting at Start.
type TimeCount struct {
	Start  time.Time
	Tenant string
	Kind   string
	Count  int64
}

// KeyCount is a number of incidents for one key (a rule, a host).
type KeyCount struct {
	Key   string
	Count int64
}

// RuleStat is how a detection rule fared: every incident it raised, those
// that blocked, and those the security team marked as false positives.
type RuleStat struct {
	Rule           string
	Hits           int64
	Blocks         int64
	FalsePositives int64
}

// and appends a condition to a WHERE clause built by IncidentFilter.where.
func and(where, cond string) string {
	if where == "" {
		return " WHERE " + cond
	}
	return where + " AND " + cond
}

// CountOverTime counts incidents matching f by time bucket, tenant and kind,
// oldest bucket first (for a chart). bucket below a second reads as an hour.
func (s *Store) CountOverTime(ctx context.Context, f IncidentFilter, bucket time.Duration) ([]TimeCount, error) {
	if bucket < time.Second {
		bucket = time.Hour
	}
	where, args := f.where()
	q := `SELECT (at / ?) * ? AS b, tenant, kind, COUNT(*) FROM incidents` + where +
		` GROUP BY b, tenant, kind ORDER BY b, tenant, kind`
	rows, err := s.db.QueryContext(ctx, q, append([]any{int64(bucket), int64(bucket)}, args...)...)
	if err != nil {
		return nil, fmt.Errorf("store: count over time: %w", err)
	}
	defer rows.Close()
	var out []TimeCount
	for rows.Next() {
		var c TimeCount
		var b int64
		if err := rows.Scan(&b, &c.Tenant, &c.Kind, &c.Count); err != nil {
			return nil, fmt.Errorf("store: count over time: %w", err)
		}
		c.Start = fromNanos(b)
		out = append(out, c)
	}
	return out, rows.Err()
}

// TopRules returns the n rules with the most incidents matching f.
func (s *Store) TopRules(ctx context.Context, f IncidentFilter, n int) ([]KeyCount, error) {
	return s.top(ctx, "rule", f, n)
}

// TopHosts returns the n hosts with the most incidents matching f.
func (s *Store) TopHosts(ctx context.Context, f IncidentFilter, n int) ([]KeyCount, error) {
	return s.top(ctx, "host", f, n)
}

// top counts by col, a fixed column name (never user input).
func (s *Store) top(ctx context.Context, col string, f IncidentFilter, n int) ([]KeyCount, error) {
	if n <= 0 {
		n = 10
	}
	where, args := f.where()
	q := `SELECT ` + col + `, COUNT(*) AS c FROM incidents` + and(where, col+" != ''") +
		` GROUP BY ` + col + ` ORDER BY c DESC, ` + col + ` LIMIT ?`
	rows, err := s.db.QueryContext(ctx, q, append(args, n)...)
	if err != nil {
		return nil, fmt.Errorf("store: top %ss: %w", col, err)
	}
	defer rows.Close()
	var out []KeyCount
	for rows.Next() {
		var c KeyCount
		if err := rows.Scan(&c.Key, &c.Count); err != nil {
			return nil, fmt.Errorf("store: top %ss: %w", col, err)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// RuleStats returns, per detection rule, hits, blocks and false positives
// among the incidents matching f, most hits first.
func (s *Store) RuleStats(ctx context.Context, f IncidentFilter) ([]RuleStat, error) {
	where, args := f.where()
	q := `SELECT rule, COUNT(*) AS hits, SUM(CASE WHEN action = 'block' THEN 1 ELSE 0 END),
		SUM(CASE WHEN triage = ? THEN 1 ELSE 0 END) FROM incidents` +
		and(where, "rule != ''") + ` GROUP BY rule ORDER BY hits DESC, rule`
	rows, err := s.db.QueryContext(ctx, q, append([]any{incident.TriageFalsePositive}, args...)...)
	if err != nil {
		return nil, fmt.Errorf("store: rule stats: %w", err)
	}
	defer rows.Close()
	var out []RuleStat
	for rows.Next() {
		var r RuleStat
		if err := rows.Scan(&r.Rule, &r.Hits, &r.Blocks, &r.FalsePositives); err != nil {
			return nil, fmt.Errorf("store: rule stats: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// SameFingerprint returns the newest incidents (at most limit) of tenant
// whose secret had the given fingerprint: the same secret seen elsewhere.
// Scoped to one tenant: whether two tenants hold the same secret is itself
// something one tenant must not learn about another.
func (s *Store) SameFingerprint(ctx context.Context, tenant, fingerprint string, limit int) ([]incident.Incident, error) {
	if tenant == "" {
		return nil, fmt.Errorf("%w: same fingerprint needs a tenant", ErrInvalid)
	}
	if fingerprint == "" {
		return nil, nil
	}
	p, err := s.ListIncidents(ctx, IncidentFilter{Tenant: tenant, Fingerprint: fingerprint, Limit: limit})
	return p.Incidents, err
}
