package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Run is one sandbox launch: its tenant and class, the hash of its token
// (never the token), and what it may reach beyond its class.
type Run struct {
	// ID is set by CreateRun when empty (NewID(PrefixRun, …)).
	ID     string
	Tenant string
	Class  string
	// TokenHash is a hash of the run token (required, unique).
	TokenHash string
	Created   time.Time // zero: now
	Expires   time.Time // zero: no expiry
	Ended     time.Time // zero: still running
	// RepoRemote is the repository the run works on, if any.
	RepoRemote string
	// Manifests and Extra are JSON documents (the manifests the run
	// declared, its extra allow entries); nil is stored as [].
	Manifests json.RawMessage
	Extra     json.RawMessage
}

// RunFilter selects runs. Empty fields do not filter.
type RunFilter struct {
	Tenant string
	// Active keeps runs not ended and not expired at Now (zero: the store's clock).
	Active bool
	Now    time.Time
	// Limit: zero is 100; at most 1000.
	Limit int
}

const runColumns = `id, tenant, class, token_hash, created_at, expires_at, ended_at, repo_remote, manifests, extra`

func scanRun(sc interface{ Scan(...any) error }) (Run, error) {
	var r Run
	var c, e, end int64
	var m, x string
	err := sc.Scan(&r.ID, &r.Tenant, &r.Class, &r.TokenHash, &c, &e, &end, &r.RepoRemote, &m, &x)
	r.Created, r.Expires, r.Ended = fromNanos(c), fromNanos(e), fromNanos(end)
	r.Manifests, r.Extra = json.RawMessage(m), json.RawMessage(x)
	return r, err
}

func jsonOrEmpty(m json.RawMessage) (string, error) {
	if len(m) == 0 {
		return "[]", nil
	}
	if !json.Valid(m) {
		return "", fmt.Errorf("%w: not JSON", ErrInvalid)
	}
	return string(m), nil
}

// CreateRun stores a new run and returns it with its id and times set.
func (s *Store) CreateRun(ctx context.Context, r Run) (Run, error) {
	if r.Tenant == "" || r.Class == "" || r.TokenHash == "" {
		return Run{}, fmt.Errorf("%w: a run needs a tenant, a class and a token hash", ErrInvalid)
	}
	if r.Created.IsZero() {
		r.Created = s.now()
	}
	if r.ID == "" {
		r.ID = NewID(PrefixRun, r.Created)
	}
	m, err := jsonOrEmpty(r.Manifests)
	if err != nil {
		return Run{}, fmt.Errorf("store: run manifests: %w", err)
	}
	x, err := jsonOrEmpty(r.Extra)
	if err != nil {
		return Run{}, fmt.Errorf("store: run extra entries: %w", err)
	}
	r.Manifests, r.Extra = json.RawMessage(m), json.RawMessage(x)
	if _, err := s.db.ExecContext(ctx, `INSERT INTO runs (`+runColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.ID, r.Tenant, r.Class, r.TokenHash, nanos(r.Created), nanos(r.Expires), nanos(r.Ended), r.RepoRemote, m, x); err != nil {
		return Run{}, fmt.Errorf("store: create run: %w", err)
	}
	s.published(ctx, ChangeRunCreated, r.ID)
	return r, nil
}

// GetRun returns a run, or ErrNotFound.
func (s *Store) GetRun(ctx context.Context, id string) (Run, error) {
	return s.getRun(ctx, "id", id)
}

// RunByTokenHash returns the run whose token hashes to h, or ErrNotFound.
func (s *Store) RunByTokenHash(ctx context.Context, h string) (Run, error) {
	return s.getRun(ctx, "token_hash", h)
}

func (s *Store) getRun(ctx context.Context, col, v string) (Run, error) {
	r, err := scanRun(s.db.QueryRowContext(ctx, "SELECT "+runColumns+" FROM runs WHERE "+col+" = ?", v))
	if errors.Is(err, sql.ErrNoRows) {
		return Run{}, fmt.Errorf("%w: run", ErrNotFound)
	}
	if err != nil {
		return Run{}, fmt.Errorf("store: run: %w", err)
	}
	return r, nil
}

// EndRun marks a run ended at at (zero: now). Ending an ended run keeps the
// first end time; an unknown id is ErrNotFound.
func (s *Store) EndRun(ctx context.Context, id string, at time.Time) (Run, error) {
	if at.IsZero() {
		at = s.now()
	}
	res, err := s.db.ExecContext(ctx, "UPDATE runs SET ended_at = ? WHERE id = ? AND ended_at = 0", at.UnixNano(), id)
	if err != nil {
		return Run{}, fmt.Errorf("store: end run: %w", err)
	}
	if n, _ := res.RowsAffected(); n > 0 {
		s.published(ctx, ChangeRunEnded, id)
	}
	return s.GetRun(ctx, id)
}

// ListRuns returns runs matching f, newest first.
func (s *Store) ListRuns(ctx context.Context, f RunFilter) ([]Run, error) {
	q := "SELECT " + runColumns + " FROM runs WHERE 1=1"
	var args []any
	if f.Tenant != "" {
		q += " AND tenant = ?"
		args = append(args, f.Tenant)
	}
	if f.Active {
		now := f.Now
		if now.IsZero() {
			now = s.now()
		}
		q += " AND ended_at = 0 AND (expires_at = 0 OR expires_at > ?)"
		args = append(args, now.UnixNano())
	}
	q += " ORDER BY created_at DESC, id DESC LIMIT ?"
	return queryAll(ctx, s.db, "list runs", scanRun, q, append(args, clampLimit(f.Limit, 100))...)
}

func clampLimit(n, def int) int {
	switch {
	case n <= 0:
		return def
	case n > 1000:
		return 1000
	}
	return n
}
