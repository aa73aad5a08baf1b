package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// OpenPostgres connects to the PostgreSQL database named by dsn (a
// libpq-style "host=… dbname=…" string or a postgres:// URL) and applies the
// migrations this binary knows, as Open does for SQLite. Several replicas may
// open the same database at once: migrations take an advisory lock.
//
// The DSN may hold a password: it is never logged, and errors name the host
// and database only.
func OpenPostgres(ctx context.Context, dsn string) (*Store, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		// pgx's parse errors quote the DSN, password included: say less.
		return nil, fmt.Errorf("store: postgres: the DSN does not parse (key=value pairs or a postgres:// URL)")
	}
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = map[string]string{}
	}
	// An incident id handed to a client must be committed: refuse a
	// server-wide synchronous_commit=off for this connection.
	cfg.RuntimeParams["synchronous_commit"] = "on"
	cfg.RuntimeParams["application_name"] = "sluice"
	db := sql.OpenDB(rebindConnector{stdlib.GetConnector(*cfg)})
	db.SetMaxOpenConns(16)
	db.SetMaxIdleConns(16)
	db.SetConnMaxIdleTime(5 * time.Minute)
	where := fmt.Sprintf("postgres %s/%s", cfg.Host, cfg.Database)
	s := &Store{db: db, path: where, driver: Postgres, pgConfig: cfg}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// rebindConnector hands database/sql pgx connections that accept the
// store's "?" placeholders: the queries are written once for both engines.
type rebindConnector struct{ driver.Connector }

func (c rebindConnector) Connect(ctx context.Context) (driver.Conn, error) {
	cn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return rebindConn{cn.(*stdlib.Conn)}, nil
}

// rebindConn is a pgx connection whose statements are rebound; every other
// method (transactions, ping, session reset) is pgx's own.
type rebindConn struct{ *stdlib.Conn }

func (c rebindConn) Prepare(q string) (driver.Stmt, error) { return c.Conn.Prepare(rebind(q)) }

func (c rebindConn) PrepareContext(ctx context.Context, q string) (driver.Stmt, error) {
	return c.Conn.PrepareContext(ctx, rebind(q))
}

func (c rebindConn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	return c.Conn.ExecContext(ctx, rebind(q), args)
}

func (c rebindConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	return c.Conn.QueryContext(ctx, rebind(q), args)
}

// migrationLock is the advisory lock key under which replicas migrate one
// at a time ("sluice" in ASCII).
const migrationLock = 0x736c75696365
