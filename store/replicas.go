package store

import (
	"context"
	"fmt"
	"time"
)

// Replica is one gateway process sharing the store, as it last reported.
type Replica struct {
	// ID is its Store.Replica.
	ID string
	// PolicyVersion identifies the policy it has loaded (a hash of its file).
	PolicyVersion string
	Started       time.Time
	Seen          time.Time
}

// replicaForget is how long a silent replica's row is kept.
const replicaForget = 24 * time.Hour

// Heartbeat records that r is alive now with its policy version (Seen is
// set from the store's clock), and drops replicas silent for a day.
func (s *Store) Heartbeat(ctx context.Context, r Replica) error {
	if r.ID == "" {
		return fmt.Errorf("%w: a heartbeat needs a replica id", ErrInvalid)
	}
	now := s.now()
	if r.Started.IsZero() {
		r.Started = now
	}
	if _, err := s.db.ExecContext(ctx, `INSERT INTO replicas (id, policy_version, started_at, seen_at)
		VALUES (?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET policy_version = excluded.policy_version,
		seen_at = excluded.seen_at`, r.ID, r.PolicyVersion, nanos(r.Started), nanos(now)); err != nil {
		return fmt.Errorf("store: heartbeat: %w", err)
	}
	if _, err := s.db.ExecContext(ctx, "DELETE FROM replicas WHERE seen_at < ?", nanos(now.Add(-replicaForget))); err != nil {
		return fmt.Errorf("store: heartbeat: %w", err)
	}
	return nil
}

// Replicas lists the replicas seen at or after since, by id.
func (s *Store) Replicas(ctx context.Context, since time.Time) ([]Replica, error) {
	return queryAll(ctx, s.db, "replicas", func(sc rowScanner) (Replica, error) {
		var r Replica
		var st, seen int64
		err := sc.Scan(&r.ID, &r.PolicyVersion, &st, &seen)
		r.Started, r.Seen = fromNanos(st), fromNanos(seen)
		return r, err
	}, "SELECT id, policy_version, started_at, seen_at FROM replicas WHERE seen_at >= ? ORDER BY id", nanos(since))
}
