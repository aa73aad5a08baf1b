// Package store keeps Sluice's incidents, runs, access requests and audit log
// in one database: SQLite embedded, or PostgreSQL shared by replicas.
package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"modernc.org/sqlite" // the pure-Go SQLite driver, registered as "sqlite"
)

// FileName is the database's name inside the data directory.
const FileName = "sluice.db"

// Errors callers test for.
var (
	// ErrNotFound: no row with that id.
	ErrNotFound = errors.New("store: not found")
	// ErrSchemaTooNew: the database was migrated by a newer sluice.
	ErrSchemaTooNew = errors.New("store: database schema is newer than this binary")
	// ErrClosed: the writer was closed.
	ErrClosed = errors.New("store: writer closed")
	// ErrInvalid: an argument was out of range (an unknown state, say).
	ErrInvalid = errors.New("store: invalid argument")
	// ErrConflict: the row is not in a state that allows the change (a
	// request decided twice, say).
	ErrConflict = errors.New("store: conflicting state")
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Store is an open database. Its methods are safe for concurrent use.
type Store struct {
	db   *sql.DB
	path string // the SQLite file, or "postgres host/dbname"
	// driver is the engine; pgConfig its connection settings (PostgreSQL
	// only), for the notification listener's own connection.
	driver   Driver
	pgConfig *pgx.ConnConfig
	// Now is the clock for timestamps the store fills in. Nil: time.Now.
	Now func() time.Time
	// Replica names this process in the changes it publishes, so that it
	// can tell its own from its peers' (cmd uses host name and pid). Empty:
	// its changes carry no origin.
	Replica string
}

// dsn builds the connection string. The pragmas go in the DSN because a
// PRAGMA statement reaches only one pooled connection; _txlock=immediate
// makes every transaction take the write lock at BEGIN, so that two
// read-then-write transactions do not both read and then fail with
// "database is locked" on their first write. synchronous(FULL) makes a
// commit survive a power loss, not just a killed process: an incident id
// handed to a client must not vanish.
func dsn(path string) string {
	q := url.Values{}
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "busy_timeout(5000)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "synchronous(FULL)")
	q.Set("_txlock", "immediate")
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
}

// Open opens (creating if needed) the database at path and applies the
// migrations this binary knows. A database migrated by a newer binary is
// refused with ErrSchemaTooNew rather than used half-understood.
func Open(ctx context.Context, path string) (*Store, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	// Created 0600 before SQLite opens it: incidents are for the security team.
	if f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600); err == nil {
		f.Close()
	}
	db, err := sql.Open("sqlite", dsn(path))
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	s := &Store{db: db, path: path, driver: SQLite}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Path is the database file, or "postgres host/dbname" (never a password).
func (s *Store) Path() string { return s.path }

// Driver is the engine behind the store.
func (s *Store) Driver() Driver { return s.driver }

// DB is the underlying handle, for tests and maintenance; use the methods.
func (s *Store) DB() *sql.DB { return s.db }

// Ping reports whether the database answers (for readiness).
func (s *Store) Ping(ctx context.Context) error {
	var n int
	if err := s.db.QueryRowContext(ctx, "SELECT 1").Scan(&n); err != nil {
		return fmt.Errorf("store: ping: %w", err)
	}
	return nil
}

func (s *Store) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// migration is one numbered schema change.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the embedded migrations in order, rendered for d.
// Their names start with the version, from 1 without gaps: "0001_init.sql".
func migrations(d Driver) ([]migration, error) {
	names, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, n := range names {
		base := filepath.Base(n)
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("store: migration %s: name must start with its number", base)
		}
		b, err := migrationFS.ReadFile(n)
		if err != nil {
			return nil, err
		}
		text, err := translate(string(b), d)
		if err != nil {
			return nil, fmt.Errorf("store: migration %s: %w", base, err)
		}
		ms = append(ms, migration{version: v, name: base, sql: text})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i, m := range ms {
		if m.version != i+1 {
			return nil, fmt.Errorf("store: migration %s: want version %d (no gaps, no duplicates)", m.name, i+1)
		}
	}
	return ms, nil
}

// SchemaVersion is the newest migration this binary knows.
func SchemaVersion() int {
	ms, _ := migrations(SQLite)
	return len(ms)
}

// migrate applies the migrations the database lacks, each in its own
// transaction together with its row in schema_migrations.
func (s *Store) migrate(ctx context.Context) error {
	ms, err := migrations(s.driver)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(migrateBusyFor)
	for wait := 10 * time.Millisecond; ; {
		done, err := s.migrateOne(ctx, ms)
		if busy(err) && time.Now().Before(deadline) {
			// Another process opening the same new database holds it
			// (making it WAL, applying a migration): SQLite says so at once
			// on some of those paths, not after busy_timeout. Try again.
			select {
			case <-ctx.Done():
				return err
			case <-time.After(wait):
			}
			wait = min(2*wait, 500*time.Millisecond)
			continue
		}
		if err != nil || done {
			return err
		}
	}
}

// migrateBusyFor is how long Open keeps trying a database that another
// opener holds.
const migrateBusyFor = 30 * time.Second

// busy reports SQLite's SQLITE_BUSY (primary code 5, any extended code).
func busy(err error) bool {
	var e *sqlite.Error
	return errors.As(err, &e) && e.Code()&0xff == 5
}

// migrateOne applies the next missing migration; done reports none was left.
// The version is read inside the transaction, after taking SQLite's write
// lock (immediate) or PostgreSQL's advisory lock, so two processes opening
// the same database cannot both apply it.
func (s *Store) migrateOne(ctx context.Context, ms []migration) (done bool, err error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("store: migrate %s: %w", s.path, err)
	}
	defer tx.Rollback()
	if s.driver == Postgres {
		if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(?)", int64(migrationLock)); err != nil {
			return false, fmt.Errorf("store: migrate %s: lock: %w", s.path, err)
		}
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`); err != nil {
		return false, fmt.Errorf("store: open %s: %w", s.path, err)
	}
	var cur int
	if err := tx.QueryRowContext(ctx, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations").Scan(&cur); err != nil {
		return false, fmt.Errorf("store: migrate: %w", err)
	}
	if cur > len(ms) {
		return false, fmt.Errorf("%w: %s is at version %d, this sluice knows up to %d: run the newer sluice or restore a backup",
			ErrSchemaTooNew, s.path, cur, len(ms))
	}
	if cur == len(ms) {
		return true, nil
	}
	m := ms[cur]
	if _, err := tx.ExecContext(ctx, m.sql); err != nil {
		return false, fmt.Errorf("store: migration %s: %w", m.name, err)
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
		m.version, m.name, s.now().UnixNano()); err != nil {
		return false, fmt.Errorf("store: migration %s: %w", m.name, err)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("store: migration %s: %w", m.name, err)
	}
	return false, nil
}

// nanos and fromNanos convert times to the integer columns (0 = unset).
func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// rowScanner is a *sql.Row or *sql.Rows: what the scanXxx functions read a record from.
type rowScanner = interface{ Scan(...any) error }

// queryAll runs q on db and reads every row with scan; errors say "store: what: …".
func queryAll[T any](ctx context.Context, db *sql.DB, what string, scan func(rowScanner) (T, error), q string, args ...any) ([]T, error) {
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("store: %s: %w", what, err)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("store: %s: %w", what, err)
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
