package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// Kinds of change that replicas tell one another about.
const (
	// ChangeRunCreated: ID is the run's id.
	ChangeRunCreated = "run.created"
	// ChangeRunEnded: ID is the run's id.
	ChangeRunEnded = "run.ended"
	// ChangeGrants: access requests were decided or expired (ID: the request, or "").
	ChangeGrants = "grants"
	// ChangePolicy: a replica loaded a policy; ID is its version.
	ChangePolicy = "policy"
	// ChangeResync is never sent: a Listener hands it to OnChange when it
	// (re)connects, because changes may have been missed while it was not
	// listening. The receiver reloads everything it caches.
	ChangeResync = "resync"
)

// changeChannel is the PostgreSQL notification channel.
const changeChannel = "sluice_changes"

// Change is one notification: what changed, and which replica changed it.
type Change struct {
	Kind string
	ID   string
	// Origin is the Store.Replica of the store that published it.
	Origin string
}

func (c Change) payload() string { return c.Kind + " " + c.ID + " " + c.Origin }

func parseChange(p string) (Change, bool) {
	f := strings.Fields(p)
	if len(f) == 0 {
		return Change{}, false
	}
	c := Change{Kind: f[0]}
	if len(f) > 1 {
		c.ID = f[1]
	}
	if len(f) > 2 {
		c.Origin = f[2]
	}
	return c, true
}

// Notifies reports whether other processes can hear this store's changes:
// PostgreSQL's LISTEN/NOTIFY. SQLite is one node: there is nobody to tell.
func (s *Store) Notifies() bool { return s.driver == Postgres }

// Publish tells every replica listening on the same database about c
// (Origin is filled in from s.Replica). Delivery is at most once: a
// listener that was away resyncs when it comes back (ChangeResync), and
// replicas resync periodically anyway. On SQLite it does nothing.
func (s *Store) Publish(ctx context.Context, c Change) error {
	if s.driver != Postgres {
		return nil
	}
	c.Origin = s.Replica
	if _, err := s.db.ExecContext(ctx, "SELECT pg_notify(?, ?)", changeChannel, c.payload()); err != nil {
		return fmt.Errorf("store: publish %s: %w", c.Kind, err)
	}
	return nil
}

// published publishes a change made by one of the store's own methods,
// after its commit. A failure is not the change's: it is committed, and the
// periodic resync carries it to the other replicas.
func (s *Store) published(ctx context.Context, kind, id string) {
	s.Publish(context.WithoutCancel(ctx), Change{Kind: kind, ID: id})
}

// Listener hears the changes other replicas publish, on a connection of its
// own. Store and OnChange are required.
type Listener struct {
	Store *Store
	// OnChange is called for every change, in order, from one goroutine;
	// also with ChangeResync after every (re)connection.
	OnChange func(Change)
	// Logger nil: slog.Default().
	Logger *slog.Logger
	// Ping is how long a quiet connection waits before it is checked. Zero: 15s.
	Ping time.Duration

	connected atomic.Bool
}

// Connected reports whether the listener is listening now (for readiness
// and metrics): a replica that is not may miss changes until it resyncs.
func (l *Listener) Connected() bool { return l.connected.Load() }

// Run listens until ctx ends, reconnecting with backoff. On SQLite it
// returns at once.
func (l *Listener) Run(ctx context.Context) {
	if !l.Store.Notifies() {
		return
	}
	log := l.Logger
	if log == nil {
		log = slog.Default()
	}
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		start := time.Now()
		err := l.listen(ctx)
		l.connected.Store(false)
		if ctx.Err() != nil {
			return
		}
		if time.Since(start) > time.Minute {
			backoff = 100 * time.Millisecond
		}
		log.Warn("store: change listener disconnected; reconnecting", "err", err, "in", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

func (l *Listener) listen(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, l.Store.pgConfig.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+changeChannel); err != nil {
		return err
	}
	l.connected.Store(true)
	l.OnChange(Change{Kind: ChangeResync})
	ping := l.Ping
	if ping <= 0 {
		ping = 15 * time.Second
	}
	for {
		wctx, cancel := context.WithTimeout(ctx, ping)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		switch {
		case err == nil:
			if c, ok := parseChange(n.Payload); ok {
				l.OnChange(c)
			}
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, context.DeadlineExceeded):
			// Quiet: make sure the connection is still there.
			pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			err := conn.Ping(pctx)
			cancel()
			if err != nil {
				return fmt.Errorf("ping: %w", err)
			}
		default:
			return err
		}
	}
}
