package store

import (
	"context"
	"fmt"
	"time"
)

// AuditEntry is one line of the append-only audit log: who did what to what.
type AuditEntry struct {
	// ID is assigned by the store, increasing.
	ID     int64
	Time   time.Time // zero: now
	Actor  string    // required
	Action string    // required: "incident.triage", "access.approved", …
	Tenant string
	Target string // the id of what was acted on
	Detail string
}

// AuditFilter selects audit entries. Empty fields do not filter.
type AuditFilter struct {
	Tenant string
	// Before lists entries with smaller ids only (paging); zero: from the newest.
	Before int64
	// Limit: zero is 100; at most 1000.
	Limit int
}

// AppendAudit adds an entry and returns its id. Entries can never be
// changed or deleted: triggers in the schema refuse it.
func (s *Store) AppendAudit(ctx context.Context, e AuditEntry) (int64, error) {
	if e.Time.IsZero() {
		e.Time = s.now()
	}
	return appendAudit(ctx, s.db, e)
}

// appendAudit inserts e with db, a *sql.DB or the *sql.Tx of the change it
// records. RETURNING, not LastInsertId: PostgreSQL has no such thing.
func appendAudit(ctx context.Context, db queryRower, e AuditEntry) (int64, error) {
	if e.Actor == "" || e.Action == "" {
		return 0, fmt.Errorf("%w: an audit entry needs an actor and an action", ErrInvalid)
	}
	var id int64
	err := db.QueryRowContext(ctx, `INSERT INTO audit_log (at, actor, action, tenant, target, detail)
		VALUES (?, ?, ?, ?, ?, ?) RETURNING id`, nanos(e.Time), e.Actor, e.Action, e.Tenant, e.Target, e.Detail).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("store: append audit: %w", err)
	}
	return id, nil
}

// ListAudit returns audit entries matching f, newest first.
func (s *Store) ListAudit(ctx context.Context, f AuditFilter) ([]AuditEntry, error) {
	q := "SELECT id, at, actor, action, tenant, target, detail FROM audit_log WHERE 1=1"
	var args []any
	if f.Tenant != "" {
		q += " AND tenant = ?"
		args = append(args, f.Tenant)
	}
	if f.Before > 0 {
		q += " AND id < ?"
		args = append(args, f.Before)
	}
	q += " ORDER BY id DESC LIMIT ?"
	return queryAll(ctx, s.db, "list audit", func(sc rowScanner) (AuditEntry, error) {
		var e AuditEntry
		var at int64
		err := sc.Scan(&e.ID, &at, &e.Actor, &e.Action, &e.Tenant, &e.Target, &e.Detail)
		e.Time = fromNanos(at)
		return e, err
	}, q, append(args, clampLimit(f.Limit, 100))...)
}
