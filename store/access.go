package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// States of an access request.
const (
	AccessPending  = "pending"
	AccessApproved = "approved"
	AccessDenied   = "denied"
	AccessExpired  = "expired"
)

// AccessRequest is a tenant's request to reach a host its policy does not
// allow, and the security team's decision on it.
type AccessRequest struct {
	// ID is set by CreateAccessRequest (NewID(PrefixAccess, …)).
	ID      string
	Tenant  string
	Host    string
	Ports   []int    // empty: the policy's default ports
	Methods []string // empty: any
	Paths   []string // empty: any
	// Justification is the tenant's reason for asking.
	Justification string
	// ExpiresAt ends the access (and a request still pending then).
	ExpiresAt time.Time
	// State is one of AccessPending, AccessApproved, AccessDenied, AccessExpired.
	State     string
	Reviewer  string
	Reason    string // the reviewer's reason
	CreatedAt time.Time
	DecidedAt time.Time
}

// AccessFilter selects access requests. Empty fields do not filter.
type AccessFilter struct {
	Tenant string
	State  string
	// Limit: zero is 100; at most 1000.
	Limit int
}

// AccessDecision is the security team's answer to a pending request.
type AccessDecision struct {
	Approve  bool
	Reviewer string // required
	Reason   string
}

const accessColumns = `id, tenant, host, ports, methods, paths, justification, expires_at, state, reviewer, reason,
	created_at, decided_at`

func scanAccess(sc interface{ Scan(...any) error }) (AccessRequest, error) {
	var a AccessRequest
	var ports, methods, paths string
	var exp, created, decided int64
	if err := sc.Scan(&a.ID, &a.Tenant, &a.Host, &ports, &methods, &paths, &a.Justification, &exp, &a.State,
		&a.Reviewer, &a.Reason, &created, &decided); err != nil {
		return a, err
	}
	a.ExpiresAt, a.CreatedAt, a.DecidedAt = fromNanos(exp), fromNanos(created), fromNanos(decided)
	for _, d := range []struct {
		s string
		v any
	}{{ports, &a.Ports}, {methods, &a.Methods}, {paths, &a.Paths}} {
		if err := json.Unmarshal([]byte(d.s), d.v); err != nil {
			return a, fmt.Errorf("access request %s: %w", a.ID, err)
		}
	}
	return a, nil
}

func jsonList[T any](v []T) string {
	if v == nil {
		v = []T{}
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// CreateAccessRequest stores a new pending request and returns it with its
// id, state and creation time set.
func (s *Store) CreateAccessRequest(ctx context.Context, a AccessRequest) (AccessRequest, error) {
	if a.Tenant == "" || a.Host == "" || a.ExpiresAt.IsZero() {
		return AccessRequest{}, fmt.Errorf("%w: an access request needs a tenant, a host and an expiry", ErrInvalid)
	}
	a.CreatedAt = s.now()
	if a.ID == "" {
		a.ID = NewID(PrefixAccess, a.CreatedAt)
	}
	a.State, a.Reviewer, a.Reason, a.DecidedAt = AccessPending, "", "", time.Time{}
	if _, err := s.db.ExecContext(ctx, `INSERT INTO access_requests (`+accessColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		a.ID, a.Tenant, a.Host, jsonList(a.Ports), jsonList(a.Methods), jsonList(a.Paths), a.Justification,
		nanos(a.ExpiresAt), a.State, "", "", nanos(a.CreatedAt), 0); err != nil {
		return AccessRequest{}, fmt.Errorf("store: create access request: %w", err)
	}
	return a, nil
}

// GetAccessRequest returns one request, or ErrNotFound.
func (s *Store) GetAccessRequest(ctx context.Context, id string) (AccessRequest, error) {
	return getAccess(ctx, s.db, id, "")
}

type queryRower interface {
	QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row
}

// getAccess reads a request; lock is "" or forUpdate's suffix.
func getAccess(ctx context.Context, db queryRower, id, lock string) (AccessRequest, error) {
	a, err := scanAccess(db.QueryRowContext(ctx, "SELECT "+accessColumns+" FROM access_requests WHERE id = ?"+lock, id))
	if errors.Is(err, sql.ErrNoRows) {
		return AccessRequest{}, fmt.Errorf("%w: access request %s", ErrNotFound, id)
	}
	if err != nil {
		return AccessRequest{}, fmt.Errorf("store: access request: %w", err)
	}
	return a, nil
}

// ListAccessRequests returns requests matching f, newest first.
func (s *Store) ListAccessRequests(ctx context.Context, f AccessFilter) ([]AccessRequest, error) {
	q := "SELECT " + accessColumns + " FROM access_requests WHERE 1=1"
	var args []any
	if f.Tenant != "" {
		q += " AND tenant = ?"
		args = append(args, f.Tenant)
	}
	if f.State != "" {
		q += " AND state = ?"
		args = append(args, f.State)
	}
	q += " ORDER BY created_at DESC, id DESC LIMIT ?"
	return s.queryAccess(ctx, q, append(args, clampLimit(f.Limit, 100))...)
}

func (s *Store) queryAccess(ctx context.Context, q string, args ...any) ([]AccessRequest, error) {
	return queryAll(ctx, s.db, "access requests", scanAccess, q, args...)
}

// DecideAccessRequest approves or denies a pending request and records the
// decision in the audit log, in one transaction. A request that is not
// pending (decided already, or expired) is ErrConflict; a pending request
// whose expiry has passed is expired instead of decided (ErrConflict too).
func (s *Store) DecideAccessRequest(ctx context.Context, id string, d AccessDecision) (AccessRequest, error) {
	if d.Reviewer == "" {
		return AccessRequest{}, fmt.Errorf("%w: a decision needs a reviewer", ErrInvalid)
	}
	now := s.now()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return AccessRequest{}, fmt.Errorf("store: decide access request: %w", err)
	}
	defer tx.Rollback()
	a, err := getAccess(ctx, tx, id, s.forUpdate())
	if err != nil {
		return AccessRequest{}, err
	}
	if a.State != AccessPending {
		return a, fmt.Errorf("%w: access request %s is %s", ErrConflict, id, a.State)
	}
	if !a.ExpiresAt.After(now) {
		if _, err := tx.ExecContext(ctx, "UPDATE access_requests SET state = ? WHERE id = ?", AccessExpired, id); err != nil {
			return AccessRequest{}, fmt.Errorf("store: decide access request: %w", err)
		}
		if err := tx.Commit(); err != nil {
			return AccessRequest{}, fmt.Errorf("store: decide access request: %w", err)
		}
		s.published(ctx, ChangeGrants, id)
		a.State = AccessExpired
		return a, fmt.Errorf("%w: access request %s expired before it was decided", ErrConflict, id)
	}
	a.State = AccessDenied
	if d.Approve {
		a.State = AccessApproved
	}
	a.Reviewer, a.Reason, a.DecidedAt = d.Reviewer, d.Reason, now
	if _, err := tx.ExecContext(ctx, `UPDATE access_requests SET state = ?, reviewer = ?, reason = ?, decided_at = ?
		WHERE id = ?`, a.State, a.Reviewer, a.Reason, nanos(now), id); err != nil {
		return AccessRequest{}, fmt.Errorf("store: decide access request: %w", err)
	}
	if _, err := appendAudit(ctx, tx, AuditEntry{Time: now, Actor: d.Reviewer, Action: "access." + a.State,
		Tenant: a.Tenant, Target: id, Detail: a.Host}); err != nil {
		return AccessRequest{}, err
	}
	if err := tx.Commit(); err != nil {
		return AccessRequest{}, fmt.Errorf("store: decide access request: %w", err)
	}
	s.published(ctx, ChangeGrants, id)
	return a, nil
}

// ActiveGrants returns the approved requests still in force at now, for
// every tenant, oldest first: what the policy must add to the allowlists.
func (s *Store) ActiveGrants(ctx context.Context, now time.Time) ([]AccessRequest, error) {
	return s.queryAccess(ctx, "SELECT "+accessColumns+` FROM access_requests
		WHERE state = ? AND expires_at > ? ORDER BY created_at, id`, AccessApproved, now.UnixNano())
}

// ExpireAccessRequests marks pending and approved requests whose expiry is
// at or before now as expired, and returns how many.
func (s *Store) ExpireAccessRequests(ctx context.Context, now time.Time) (int64, error) {
	res, err := s.db.ExecContext(ctx, `UPDATE access_requests SET state = ?
		WHERE state IN (?, ?) AND expires_at <= ?`, AccessExpired, AccessPending, AccessApproved, now.UnixNano())
	if err != nil {
		return 0, fmt.Errorf("store: expire access requests: %w", err)
	}
	n, _ := res.RowsAffected()
	if n > 0 {
		s.published(ctx, ChangeGrants, "")
	}
	return n, nil
}
