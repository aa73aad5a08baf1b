package store

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sluice-egress/sluice/incident"
)

func TestOpenAppliesPragmasOnEveryConnection(t *testing.T) {
	s := MustOpen(t)
	ctx := context.Background()
	// Hold several connections at once so that the pool must open new ones:
	// a PRAGMA run once would reach only the first.
	for i := range 4 {
		c, err := s.DB().Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var mode string
		var fk, busy int
		if err := c.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
			t.Fatal(err)
		}
		c.QueryRowContext(ctx, "PRAGMA foreign_keys").Scan(&fk)
		c.QueryRowContext(ctx, "PRAGMA busy_timeout").Scan(&busy)
		if mode != "wal" || fk != 1 || busy != 5000 {
			t.Errorf("conn %d: journal_mode=%s foreign_keys=%d busy_timeout=%d", i, mode, fk, busy)
		}
	}
	fi, err := os.Stat(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("database mode %v, want 0600", fi.Mode().Perm())
	}
}

func TestMigrations(t *testing.T) {
	eachDriver(t, func(t *testing.T, db testDB) {
		ctx := context.Background()
		s, err := db.OpenErr(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var v int
		s.DB().QueryRow("SELECT MAX(version) FROM schema_migrations").Scan(&v)
		if v != SchemaVersion() || v < 1 {
			t.Fatalf("schema version %d, binary knows %d", v, SchemaVersion())
		}
		MustInsert(t, s, synth(3)...)
		s.Close()

		t.Run("reopening keeps the data and applies nothing twice", func(t *testing.T) {
			s := db.Open(t)
			var n, rows int
			s.DB().QueryRow("SELECT COUNT(*) FROM incidents").Scan(&n)
			s.DB().QueryRow("SELECT COUNT(*) FROM schema_migrations").Scan(&rows)
			if n != 3 || rows != SchemaVersion() {
				t.Fatalf("%d incidents, %d migration rows", n, rows)
			}
		})

		t.Run("a newer schema is refused", func(t *testing.T) {
			s, err := db.OpenErr(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.DB().Exec("INSERT INTO schema_migrations VALUES (?, 'future.sql', 0)", SchemaVersion()+1); err != nil {
				t.Fatal(err)
			}
			s.Close()
			_, err = db.OpenErr(ctx)
			if !errors.Is(err, ErrSchemaTooNew) || !strings.Contains(err.Error(), "newer sluice") {
				t.Fatalf("open: %v, want ErrSchemaTooNew with advice", err)
			}
		})

		t.Run("concurrent opens of a new database migrate once", func(t *testing.T) {
			fresh := newTestDB(t, db.Driver)
			var wg sync.WaitGroup
			errs := make(chan error, 4)
			for range 4 {
				wg.Go(func() {
					s, err := fresh.OpenErr(ctx)
					if err == nil {
						s.Close()
					}
					errs <- err
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
		})
	})
}

func TestConcurrentReadThenWriteTransactions(t *testing.T) {
	eachDriver(t, func(t *testing.T, db testDB) {
		// Without _txlock=immediate two transactions that read and then write
		// deadlock on the upgrade and one fails with "database is locked"
		// (busy_timeout does not help there). TriageIncident reads, then writes.
		s := db.Open(t)
		ins := synth(20)
		MustInsert(t, s, ins...)
		var wg sync.WaitGroup
		errs := make(chan error, 200)
		for g := range 8 {
			wg.Go(func() {
				for i := range 20 {
					_, err := s.TriageIncident(context.Background(), ins[(g+i)%len(ins)].ID,
						TriageUpdate{State: incident.TriageAcknowledged, Actor: "alice"})
					if err != nil {
						errs <- err
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	})
}

// busy tells SQLite's SQLITE_BUSY, which a migration that another opener
// holds up is retried on, from every other error.
func TestBusy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "busy.db")
	holder, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	ctx := context.Background()
	conn, err := holder.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "CREATE TABLE t (x INTEGER)"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "BEGIN EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}
	other, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(0)")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	_, err = other.ExecContext(ctx, "INSERT INTO t VALUES (1)")
	if !busy(err) {
		t.Fatalf("a write while another connection holds the database: %v, want SQLITE_BUSY", err)
	}
	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if _, err := other.ExecContext(ctx, "SELECT * FROM no_such_table"); busy(err) || err == nil {
		t.Fatalf("a missing table: %v, want an error that is not SQLITE_BUSY", err)
	}
	if busy(errors.New("database is locked")) || busy(nil) {
		t.Fatal("busy took an error that is no SQLite error")
	}
}
