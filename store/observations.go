package store

import (
	"context"
	"fmt"
	"time"
)

// Verdicts of an observation.
const (
	// ObservedAllowed: the policy let it through.
	ObservedAllowed = "allowed"
	// ObservedShadow: the policy would have refused it; shadow mode let it
	// through.
	ObservedShadow = "would-refuse"
)

// DefaultMaxObservations bounds the observations kept per tenant: past it
// the least recently seen go.
const DefaultMaxObservations = 20000

// Observation is what a tenant's run did: requests to one host, port,
// method and path prefix, counted.
type Observation struct {
	Tenant, Class, Run string
	Host               string
	Port               int
	Method             string
	// Path is the path prefix (the gateway keeps at most a few segments).
	Path string
	// Verdict is ObservedAllowed or ObservedShadow.
	Verdict   string
	Count     int64
	FirstSeen time.Time
	LastSeen  time.Time
}

// ObservationFilter selects observations. Tenant is required.
type ObservationFilter struct {
	Tenant string
	// Class "" for all.
	Class string
	// Since: zero for all.
	Since time.Time
	// Limit: zero is 10000; at most 100000.
	Limit int
}

const observationColumns = "tenant, class, run, host, port, method, path, verdict, count, first_seen, last_seen"

// RecordObservations adds a batch to the counts, in one transaction, then
// trims each tenant it touched to max rows (zero: DefaultMaxObservations).
func (s *Store) RecordObservations(ctx context.Context, batch []Observation, max int) error {
	if len(batch) == 0 {
		return nil
	}
	if max <= 0 {
		max = DefaultMaxObservations
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: record observations: %w", err)
	}
	defer tx.Rollback()
	tenants := map[string]bool{}
	for _, o := range batch {
		if o.Tenant == "" || o.Host == "" {
			continue
		}
		tenants[o.Tenant] = true
		first, last := nanos(o.FirstSeen), nanos(o.LastSeen)
		// CASE, not the scalar MIN/MAX (SQLite) or LEAST/GREATEST
		// (PostgreSQL): the one spelling both engines take.
		if _, err := tx.ExecContext(ctx, `INSERT INTO observations (`+observationColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (tenant, class, run, host, port, method, path, verdict) DO UPDATE SET
			count = observations.count + excluded.count,
			first_seen = CASE WHEN excluded.first_seen < observations.first_seen THEN excluded.first_seen ELSE observations.first_seen END,
			last_seen = CASE WHEN excluded.last_seen > observations.last_seen THEN excluded.last_seen ELSE observations.last_seen END`,
			o.Tenant, o.Class, o.Run, o.Host, o.Port, o.Method, o.Path, o.Verdict, max1(o.Count), first, last); err != nil {
			return fmt.Errorf("store: record observations: %w", err)
		}
	}
	for t := range tenants {
		if _, err := tx.ExecContext(ctx, `DELETE FROM observations WHERE tenant = ? AND last_seen <=
			(SELECT last_seen FROM observations WHERE tenant = ? ORDER BY last_seen DESC LIMIT 1 OFFSET ?)`, t, t, max); err != nil {
			return fmt.Errorf("store: trim observations: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: record observations: %w", err)
	}
	return nil
}

func max1(n int64) int64 {
	if n < 1 {
		return 1
	}
	return n
}

// ListObservations returns a tenant's observations, most counted first.
func (s *Store) ListObservations(ctx context.Context, f ObservationFilter) ([]Observation, error) {
	if f.Tenant == "" {
		return nil, fmt.Errorf("%w: observations need a tenant", ErrInvalid)
	}
	q := "SELECT " + observationColumns + " FROM observations WHERE tenant = ?"
	args := []any{f.Tenant}
	if f.Class != "" {
		q += " AND class = ?"
		args = append(args, f.Class)
	}
	if !f.Since.IsZero() {
		q += " AND last_seen >= ?"
		args = append(args, f.Since.UnixNano())
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 10000
	}
	limit = min(limit, 100000)
	q += " ORDER BY count DESC, host, port, method, path LIMIT ?"
	return queryAll(ctx, s.db, "observations", func(sc rowScanner) (Observation, error) {
		var o Observation
		var first, last int64
		err := sc.Scan(&o.Tenant, &o.Class, &o.Run, &o.Host, &o.Port, &o.Method, &o.Path, &o.Verdict, &o.Count, &first, &last)
		o.FirstSeen, o.LastSeen = fromNanos(first), fromNanos(last)
		return o, err
	}, q, append(args, limit)...)
}
