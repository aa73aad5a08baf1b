package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Scopes of an approved access request's grant.
const (
	// ScopeRun: the run that filed it, only.
	ScopeRun = "run"
	// ScopeClass: every run of the filing run's class.
	ScopeClass = "class"
	// ScopeTenant: every class of the tenant ("" reads as this).
	ScopeTenant = "tenant"
)

// AccessContext is what is known of an access request beyond what the tenant
// asked: the run and class it was filed from, the refusal it answers, the
// scope a reviewer granted, and how many filings and held connections it
// stands for (many for the same thing collapse into one request).
type AccessContext struct {
	ID       string
	Run      string
	Class    string
	Incident string
	// Scope is ScopeRun, ScopeClass or ScopeTenant ("" is ScopeTenant).
	Scope  string
	Joined int
	Held   int
}

// AccessScope is what a reviewer's approval grants: it replaces the request's
// ports, methods, paths and expiry, and sets its scope.
type AccessScope struct {
	Ports     []int
	Methods   []string
	Paths     []string
	ExpiresAt time.Time
	Scope     string
}

const contextColumns = "id, run, class, incident, scope, joined, held"

func scanContext(sc rowScanner) (AccessContext, error) {
	var c AccessContext
	err := sc.Scan(&c.ID, &c.Run, &c.Class, &c.Incident, &c.Scope, &c.Joined, &c.Held)
	return c, err
}

// SetAccessContext stores (or replaces) an access request's context.
func (s *Store) SetAccessContext(ctx context.Context, c AccessContext) error {
	if c.ID == "" {
		return fmt.Errorf("%w: an access context needs the request's id", ErrInvalid)
	}
	if !validScope(c.Scope) {
		return fmt.Errorf("%w: scope %q", ErrInvalid, c.Scope)
	}
	c.Joined = max(c.Joined, 1)
	_, err := s.db.ExecContext(ctx, `INSERT INTO access_request_context (`+contextColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET run = excluded.run, class = excluded.class, incident = excluded.incident,
		scope = excluded.scope, joined = excluded.joined, held = excluded.held`,
		c.ID, c.Run, c.Class, c.Incident, c.Scope, c.Joined, c.Held)
	if err != nil {
		return fmt.Errorf("store: set access context: %w", err)
	}
	return nil
}

func validScope(s string) bool {
	return s == "" || s == ScopeRun || s == ScopeClass || s == ScopeTenant
}

// GetAccessContext returns a request's context; a request filed without one
// (by a tenant token on the API) has the zero context with its id.
func (s *Store) GetAccessContext(ctx context.Context, id string) (AccessContext, error) {
	c, err := scanContext(s.db.QueryRowContext(ctx, "SELECT "+contextColumns+" FROM access_request_context WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return AccessContext{ID: id}, nil
	}
	if err != nil {
		return AccessContext{}, fmt.Errorf("store: access context: %w", err)
	}
	return c, nil
}

// AccessContexts returns the contexts of the requests named, by id (those
// without one are left out).
func (s *Store) AccessContexts(ctx context.Context, ids []string) (map[string]AccessContext, error) {
	out := map[string]AccessContext{}
	for chunk := range slices.Chunk(ids, 500) {
		q := "SELECT " + contextColumns + " FROM access_request_context WHERE id IN (?" + strings.Repeat(", ?", len(chunk)-1) + ")"
		args := make([]any, len(chunk))
		for i, id := range chunk {
			args[i] = id
		}
		cs, err := queryAll(ctx, s.db, "access contexts", scanContext, q, args...)
		if err != nil {
			return nil, err
		}
		for _, c := range cs {
			out[c.ID] = c
		}
	}
	return out, nil
}

// JoinAccessRequest counts one more filing (and, with held, one more held
// connection) for a request.
func (s *Store) JoinAccessRequest(ctx context.Context, id string, held bool) error {
	h := 0
	if held {
		h = 1
	}
	if _, err := s.db.ExecContext(ctx, "UPDATE access_request_context SET joined = joined + 1, held = held + ? WHERE id = ?", h, id); err != nil {
		return fmt.Errorf("store: join access request: %w", err)
	}
	return nil
}

// FindPendingAccess returns the pending request of tenant filed from run for
// exactly host, ports, methods and paths, if there is one: a filing for the
// same thing joins it instead of queueing another.
func (s *Store) FindPendingAccess(ctx context.Context, tenant, run string, want AccessRequest) (AccessRequest, bool, error) {
	xs, err := s.queryAccess(ctx, "SELECT "+prefixed("a.", accessColumns)+` FROM access_requests a
		JOIN access_request_context c ON c.id = a.id
		WHERE a.tenant = ? AND a.host = ? AND a.state = ? AND c.run = ? ORDER BY a.created_at, a.id LIMIT 50`,
		tenant, want.Host, AccessPending, run)
	if err != nil {
		return AccessRequest{}, false, err
	}
	for _, x := range xs {
		if slices.Equal(x.Ports, want.Ports) && slices.Equal(x.Methods, want.Methods) && slices.Equal(x.Paths, want.Paths) {
			return x, true, nil
		}
	}
	return AccessRequest{}, false, nil
}

// CountPendingAccess counts a tenant's pending requests (the queue's bound).
func (s *Store) CountPendingAccess(ctx context.Context, tenant string) (int, error) {
	var n int
	if err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM access_requests WHERE tenant = ? AND state = ?",
		tenant, AccessPending).Scan(&n); err != nil {
		return 0, fmt.Errorf("store: count access requests: %w", err)
	}
	return n, nil
}

// ScopeAccessRequest narrows a pending request to what a reviewer is about to
// approve: its ports, methods, paths, expiry and scope. A request that is not
// pending is ErrConflict.
func (s *Store) ScopeAccessRequest(ctx context.Context, id string, sc AccessScope) error {
	if !validScope(sc.Scope) || sc.ExpiresAt.IsZero() {
		return fmt.Errorf("%w: a scope needs a valid scope and an expiry", ErrInvalid)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: scope access request: %w", err)
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `UPDATE access_requests SET ports = ?, methods = ?, paths = ?, expires_at = ?
		WHERE id = ? AND state = ?`, jsonList(sc.Ports), jsonList(sc.Methods), jsonList(sc.Paths), nanos(sc.ExpiresAt), id, AccessPending)
	if err != nil {
		return fmt.Errorf("store: scope access request: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("%w: access request %s is not pending", ErrConflict, id)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO access_request_context (id, scope) VALUES (?, ?)
		ON CONFLICT (id) DO UPDATE SET scope = excluded.scope`, id, sc.Scope); err != nil {
		return fmt.Errorf("store: scope access request: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: scope access request: %w", err)
	}
	return nil
}

// prefixed qualifies each of a comma-separated column list with p.
func prefixed(p, cols string) string {
	parts := strings.Split(cols, ",")
	for i, c := range parts {
		parts[i] = p + strings.TrimSpace(c)
	}
	return strings.Join(parts, ", ")
}
