package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sluice-egress/sluice/incident"
)

const incidentColumns = `id, at, tenant, class, run, kind, reason, action, host, port, method, path, client,
	rule, location, decoding, snippet, fingerprint, triage, triage_note, triage_actor, triage_at`

func scanIncident(sc interface{ Scan(...any) error }) (incident.Incident, error) {
	var in incident.Incident
	var at, tat int64
	err := sc.Scan(&in.ID, &at, &in.Tenant, &in.Class, &in.Run, &in.Kind, &in.Reason, &in.Action, &in.Host,
		&in.Port, &in.Method, &in.Path, &in.Client, &in.Rule, &in.Where, &in.Decoding, &in.Snippet,
		&in.Fingerprint, &in.Triage.State, &in.Triage.Note, &in.Triage.Actor, &tat)
	in.Time, in.Triage.Time = fromNanos(at), fromNanos(tat)
	return in, err
}

// InsertIncidents stores incidents in one transaction: all or none. Each
// needs an ID (NewID(PrefixIncident, …)); a zero Time is now.
func (s *Store) InsertIncidents(ctx context.Context, ins []incident.Incident) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: insert incidents: %w", err)
	}
	defer tx.Rollback()
	if err := insertIncidents(ctx, tx, ins, s.now()); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: insert incidents: commit: %w", err)
	}
	return nil
}

// incidentFields is the number of columns in incidentColumns.
const incidentFields = 22

// rowsPerInsert bounds the rows of one multi-row INSERT: one statement
// instead of one round trip per row (it matters for PostgreSQL across a
// network), far below either engine's limit on parameters.
const rowsPerInsert = 128

func insertIncidents(ctx context.Context, tx *sql.Tx, ins []incident.Incident, now time.Time) error {
	row := "(?" + strings.Repeat(", ?", incidentFields-1) + ")"
	args := make([]any, 0, incidentFields*min(len(ins), rowsPerInsert))
	for start := 0; start < len(ins); start += rowsPerInsert {
		chunk := ins[start:min(start+rowsPerInsert, len(ins))]
		args = args[:0]
		for _, in := range chunk {
			if in.ID == "" {
				return fmt.Errorf("%w: incident without id", ErrInvalid)
			}
			if in.Time.IsZero() {
				in.Time = now
			}
			if in.Triage.State == "" {
				in.Triage.State = incident.TriageNew
			}
			if !incident.ValidTriage(in.Triage.State) {
				return fmt.Errorf("%w: triage state %q", ErrInvalid, in.Triage.State)
			}
			in = storable(in)
			args = append(args, in.ID, nanos(in.Time), in.Tenant, in.Class, in.Run, in.Kind, in.Reason,
				in.Action, in.Host, in.Port, in.Method, in.Path, in.Client, in.Rule, in.Where, in.Decoding,
				in.Snippet, in.Fingerprint, in.Triage.State, in.Triage.Note, in.Triage.Actor, nanos(in.Triage.Time))
		}
		q := "INSERT INTO incidents (" + incidentColumns + ") VALUES " + row + strings.Repeat(", "+row, len(chunk)-1)
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			if len(chunk) == 1 {
				return fmt.Errorf("store: insert incident %s: %w", chunk[0].ID, err)
			}
			return fmt.Errorf("store: insert %d incidents: %w", len(chunk), err)
		}
	}
	return nil
}

// storable makes an incident's text valid UTF-8 without NUL bytes: the
// text is attacker-controlled, and PostgreSQL refuses a row with either,
// which would lose the incident (and its batch-mates). Both engines store
// the same, so that a listing does not depend on the engine.
func storable(in incident.Incident) incident.Incident {
	for _, f := range []*string{&in.ID, &in.Tenant, &in.Class, &in.Run, &in.Kind, &in.Reason, &in.Action,
		&in.Host, &in.Method, &in.Path, &in.Client, &in.Rule, &in.Where, &in.Decoding, &in.Snippet,
		&in.Fingerprint, &in.Triage.Note, &in.Triage.Actor} {
		*f = cleanText(*f)
	}
	return in
}

// cleanText replaces invalid UTF-8 and NUL bytes with U+FFFD.
func cleanText(s string) string {
	if utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// GetIncident returns one incident, or ErrNotFound.
func (s *Store) GetIncident(ctx context.Context, id string) (incident.Incident, error) {
	in, err := scanIncident(s.db.QueryRowContext(ctx, "SELECT "+incidentColumns+" FROM incidents WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return incident.Incident{}, fmt.Errorf("%w: incident %s", ErrNotFound, id)
	}
	if err != nil {
		return incident.Incident{}, fmt.Errorf("store: incident %s: %w", id, err)
	}
	return in, nil
}

// IncidentFilter selects incidents. Empty fields do not filter. Results come
// newest first; After continues a listing after the last incident of the
// previous page (keyset paging: stable while new incidents arrive).
type IncidentFilter struct {
	Tenant, Run, Class, Kind, Rule, Action, Host, Triage, Fingerprint, Reason string
	// Search keeps incidents whose host, path, rule, run, fingerprint or
	// triage note contains it (case-insensitive; see search.go).
	Search string
	// Sort orders the listing (see SortKeys); "": newest first, with keyset
	// paging. Any other order pages by Offset.
	Sort string
	// Asc reverses Sort's order (oldest first for "").
	Asc bool
	// Offset skips that many incidents (only with a Sort other than "").
	Offset int
	// Since (inclusive) and Until (exclusive) bound the time; zero: open.
	Since, Until time.Time
	// After is the Cursor of the last incident already seen; "" starts at the newest.
	After string
	// Limit is the page size. Zero: 50; at most 1000.
	Limit int
}

// IncidentPage is one page of a listing.
type IncidentPage struct {
	Incidents []incident.Incident
	// Next is the cursor for the following page, "" when this was the last.
	Next string
}

// Cursor is the paging position of an incident: its time and id.
func Cursor(in incident.Incident) string {
	return fmt.Sprintf("%d.%s", nanos(in.Time), in.ID)
}

func parseCursor(c string) (int64, string, error) {
	at, id, ok := strings.Cut(c, ".")
	n, err := strconv.ParseInt(at, 10, 64)
	if !ok || err != nil || id == "" {
		return 0, "", fmt.Errorf("%w: bad cursor %q", ErrInvalid, c)
	}
	return n, id, nil
}

// where builds the WHERE clause shared by listings and statistics.
func (f IncidentFilter) where() (string, []any) {
	var conds []string
	var args []any
	eq := func(col, v string) {
		if v != "" {
			conds = append(conds, col+" = ?")
			args = append(args, v)
		}
	}
	eq("tenant", f.Tenant)
	eq("run", f.Run)
	eq("class", f.Class)
	eq("kind", f.Kind)
	eq("rule", f.Rule)
	eq("action", f.Action)
	eq("host", f.Host)
	eq("triage", f.Triage)
	eq("fingerprint", f.Fingerprint)
	eq("reason", f.Reason)
	if f.Search != "" {
		c, a := searchCond(f.Search)
		conds = append(conds, c)
		args = append(args, a...)
	}
	if !f.Since.IsZero() {
		conds = append(conds, "at >= ?")
		args = append(args, f.Since.UnixNano())
	}
	if !f.Until.IsZero() {
		conds = append(conds, "at < ?")
		args = append(args, f.Until.UnixNano())
	}
	if len(conds) == 0 {
		return "", nil
	}
	return " WHERE " + strings.Join(conds, " AND "), args
}

func (f IncidentFilter) limit() int {
	switch {
	case f.Limit <= 0:
		return 50
	case f.Limit > 1000:
		return 1000
	}
	return f.Limit
}

// listQuery is the SQL of ListIncidents (exported to the tests through
// ExplainList).
func (f IncidentFilter) listQuery() (string, []any, error) {
	if f.Sort != "" {
		return f.sortedQuery()
	}
	where, args := f.where()
	dir, cmp := "DESC", "<"
	if f.Asc {
		dir, cmp = "ASC", ">"
	}
	if f.After != "" {
		at, id, err := parseCursor(f.After)
		if err != nil {
			return "", nil, err
		}
		if where == "" {
			where = " WHERE "
		} else {
			where += " AND "
		}
		// A row value: SQLite turns it into a range on the (…, at, id) index.
		where += "(at, id) " + cmp + " (?, ?)"
		args = append(args, at, id)
	}
	q := "SELECT " + incidentColumns + " FROM incidents" + where + " ORDER BY at " + dir + ", id " + dir + " LIMIT ?"
	return q, append(args, f.limit()+1), nil
}

// ListIncidents returns one page of incidents matching f, newest first.
func (s *Store) ListIncidents(ctx context.Context, f IncidentFilter) (IncidentPage, error) {
	q, args, err := f.listQuery()
	if err != nil {
		return IncidentPage{}, err
	}
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return IncidentPage{}, fmt.Errorf("store: list incidents: %w", err)
	}
	defer rows.Close()
	var p IncidentPage
	for rows.Next() {
		in, err := scanIncident(rows)
		if err != nil {
			return IncidentPage{}, fmt.Errorf("store: list incidents: %w", err)
		}
		p.Incidents = append(p.Incidents, in)
	}
	if err := rows.Err(); err != nil {
		return IncidentPage{}, fmt.Errorf("store: list incidents: %w", err)
	}
	if n := f.limit(); len(p.Incidents) > n {
		p.Incidents = p.Incidents[:n]
		p.Next = Cursor(p.Incidents[n-1])
		if f.Sort != "" {
			p.Next = strconv.Itoa(f.Offset + n)
		}
	}
	return p, nil
}

// ExplainList returns the engine's query plan for ListIncidents(f), one line
// per step (SQLite: "SEARCH incidents USING INDEX incidents_tenant
// (tenant=?)"; PostgreSQL: EXPLAIN's lines): for tests and for diagnosing a
// slow dashboard.
func (s *Store) ExplainList(ctx context.Context, f IncidentFilter) ([]string, error) {
	q, args, err := f.listQuery()
	if err != nil {
		return nil, err
	}
	if s.driver == Postgres {
		return queryAll(ctx, s.db, "explain", func(sc rowScanner) (string, error) {
			var line string
			return line, sc.Scan(&line)
		}, "EXPLAIN "+q, args...)
	}
	rows, err := s.db.QueryContext(ctx, "EXPLAIN QUERY PLAN "+q, args...)
	if err != nil {
		return nil, fmt.Errorf("store: explain: %w", err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			return nil, err
		}
		plan = append(plan, detail)
	}
	return plan, rows.Err()
}

// TriageUpdate changes an incident's triage.
type TriageUpdate struct {
	// State is one of incident.TriageStates.
	State string
	// Note says why; it is kept in the history.
	Note string
	// Actor is who decided (required).
	Actor string
}

// TriageChange is one entry of an incident's triage history.
type TriageChange struct {
	Time     time.Time
	Actor    string
	From, To string
	Note     string
}

func (u TriageUpdate) check() error {
	if !incident.ValidTriage(u.State) {
		return fmt.Errorf("%w: triage state %q (want one of %s)", ErrInvalid, u.State, strings.Join(incident.TriageStates, ", "))
	}
	if u.Actor == "" {
		return fmt.Errorf("%w: triage needs an actor", ErrInvalid)
	}
	return nil
}

// TriageIncident sets an incident's triage state and note, appends the
// change to its history and to the audit log, all in one transaction.
func (s *Store) TriageIncident(ctx context.Context, id string, u TriageUpdate) (incident.Incident, error) {
	if err := u.check(); err != nil {
		return incident.Incident{}, err
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return incident.Incident{}, fmt.Errorf("store: triage: %w", err)
	}
	defer tx.Rollback()
	if err := s.triageTx(ctx, tx, id, u, s.now(), nil); err != nil {
		return incident.Incident{}, err
	}
	in, err := scanIncident(tx.QueryRowContext(ctx, "SELECT "+incidentColumns+" FROM incidents WHERE id = ?", id))
	if err != nil {
		return incident.Incident{}, fmt.Errorf("store: triage: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return incident.Incident{}, fmt.Errorf("store: triage: commit: %w", err)
	}
	return in, nil
}

// triageTx triages one incident inside tx (see TriageIncidents for allow).
func (s *Store) triageTx(ctx context.Context, tx *sql.Tx, id string, u TriageUpdate, now time.Time, allow func(string) bool) error {
	var from, tenant string
	err := tx.QueryRowContext(ctx, "SELECT triage, tenant FROM incidents WHERE id = ?"+s.forUpdate(), id).Scan(&from, &tenant)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && allow != nil && !allow(tenant)) {
		return fmt.Errorf("%w: incident %s", ErrNotFound, id)
	}
	if err != nil {
		return fmt.Errorf("store: triage: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE incidents SET triage = ?, triage_note = ?, triage_actor = ?, triage_at = ?
		WHERE id = ?`, u.State, u.Note, u.Actor, now.UnixNano(), id); err != nil {
		return fmt.Errorf("store: triage: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO triage_history (incident_id, at, actor, from_state, to_state, note)
		VALUES (?, ?, ?, ?, ?, ?)`, id, now.UnixNano(), u.Actor, from, u.State, u.Note); err != nil {
		return fmt.Errorf("store: triage: %w", err)
	}
	_, err = appendAudit(ctx, tx, AuditEntry{Time: now, Actor: u.Actor, Action: "incident.triage", Tenant: tenant,
		Target: id, Detail: from + " -> " + u.State})
	return err
}

// TriageHistory returns an incident's triage changes, oldest first.
func (s *Store) TriageHistory(ctx context.Context, id string) ([]TriageChange, error) {
	return queryAll(ctx, s.db, "triage history", func(sc rowScanner) (TriageChange, error) {
		var c TriageChange
		var at int64
		err := sc.Scan(&at, &c.Actor, &c.From, &c.To, &c.Note)
		c.Time = fromNanos(at)
		return c, err
	}, `SELECT at, actor, from_state, to_state, note FROM triage_history
		WHERE incident_id = ? ORDER BY seq`, id)
}

// pruneChunk is how many incidents one prune transaction deletes.
var pruneChunk int64 = 5000

// PruneIncidents deletes incidents (and their triage history) older than
// before, in chunks so that the writer is never held up for long. It
// returns how many were deleted.
func (s *Store) PruneIncidents(ctx context.Context, before time.Time) (int64, error) {
	var total int64
	for {
		res, err := s.db.ExecContext(ctx, `DELETE FROM incidents WHERE id IN
			(SELECT id FROM incidents WHERE at < ? ORDER BY at LIMIT ?)`, before.UnixNano(), pruneChunk)
		if err != nil {
			return total, fmt.Errorf("store: prune incidents: %w", err)
		}
		n, _ := res.RowsAffected()
		total += n
		if n < pruneChunk {
			return total, nil
		}
	}
}
