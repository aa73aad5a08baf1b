package store

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluice-egress/sluice/incident"
	"github.com/sluice-egress/sluice/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// testDB is one empty database of one engine for one test; Open may be
// called more than once (each a new handle on the same database).
type testDB struct {
	Driver Driver
	path   string // SQLite
	dsn    string // PostgreSQL
}

// eachDriver runs f once per engine, each in its own subtest with a fresh
// database: the store's whole suite runs on both. The PostgreSQL subtest is
// skipped, loudly, where no server can run (failed with SLUICE_REQUIRE_POSTGRES=1).
func eachDriver(t *testing.T, f func(t *testing.T, db testDB)) {
	for _, d := range []Driver{SQLite, Postgres} {
		t.Run(string(d), func(t *testing.T) { f(t, newTestDB(t, d)) })
	}
}

// eachDriverB is eachDriver for benchmarks.
func eachDriverB(b *testing.B, f func(b *testing.B, db testDB)) {
	for _, d := range []Driver{SQLite, Postgres} {
		b.Run(string(d), func(b *testing.B) { f(b, newTestDB(b, d)) })
	}
}

func newTestDB(tb testing.TB, d Driver) testDB {
	tb.Helper()
	if d == Postgres {
		return testDB{Driver: d, dsn: pgtest.Shared(tb).NewDatabase(tb)}
	}
	return testDB{Driver: d, path: filepath.Join(tb.TempDir(), FileName)}
}

// OpenErr opens the database, migrating it.
func (db testDB) OpenErr(ctx context.Context) (*Store, error) {
	if db.Driver == Postgres {
		return OpenPostgres(ctx, db.dsn)
	}
	return Open(ctx, db.path)
}

// Open opens the database or fails the test; it is closed when tb ends.
func (db testDB) Open(tb testing.TB) *Store {
	tb.Helper()
	s, err := db.OpenErr(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// holdWriteLock starts a transaction that keeps the writer from inserting
// incidents until it is rolled back.
func holdWriteLock(tb testing.TB, s *Store) *sql.Tx {
	tb.Helper()
	tx, err := s.DB().BeginTx(context.Background(), nil) // SQLite: immediate, the write lock is taken now
	if err != nil {
		tb.Fatal(err)
	}
	if s.Driver() == Postgres {
		if _, err := tx.Exec("LOCK TABLE incidents IN EXCLUSIVE MODE"); err != nil {
			tb.Fatal(err)
		}
	}
	tb.Cleanup(func() { tx.Rollback() })
	return tx
}

// MustOpen opens a fresh SQLite store in a temporary directory.
func MustOpen(tb testing.TB) *Store {
	tb.Helper()
	s, err := Open(context.Background(), filepath.Join(tb.TempDir(), FileName))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// MustInsert stores incidents or fails the test.
func MustInsert(tb testing.TB, s *Store, ins ...incident.Incident) {
	tb.Helper()
	if err := s.InsertIncidents(context.Background(), ins); err != nil {
		tb.Fatal(err)
	}
}

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// synth returns n incidents spread over tenants, kinds, rules and hosts, one
// second apart starting at t0.
func synth(n int) []incident.Incident {
	tenants := []string{"acme", "globex", "initech"}
	kinds := []string{"deny", "secret", "exfil-link"}
	out := make([]incident.Incident, n)
	for i := range out {
		at := t0.Add(time.Duration(i) * time.Second)
		in := incident.Incident{
			ID: NewID(PrefixIncident, at), Time: at,
			Tenant: tenants[i%3], Class: "agent", Run: fmt.Sprintf("run_%d", i%7),
			Kind: kinds[i%3], Reason: "host-not-allowed", Action: "block",
			Host: fmt.Sprintf("h%d.example.test", i%11), Port: 443, Method: "GET", Path: "/x",
		}
		if in.Kind != "deny" {
			in.Rule = fmt.Sprintf("rule-%d", i%5)
			in.Reason = "secret-detected"
			in.Fingerprint = fmt.Sprintf("fp%d", i%13)
			if i%2 == 0 {
				in.Action = "alert"
			}
		}
		out[i] = in
	}
	return out
}
