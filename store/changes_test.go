package store

import (
	"context"
	"testing"
	"time"
)

// TestChangesReachOtherReplicas: two stores on one PostgreSQL database, as
// two replicas. What one changes, the other hears within a second; after
// its connection is cut, it reconnects and is told to resync.
func TestChangesReachOtherReplicas(t *testing.T) {
	db := newTestDB(t, Postgres)
	a, b := db.Open(t), db.Open(t)
	a.Replica, b.Replica = "replica-a", "replica-b"
	heard := make(chan Change, 64)
	l := &Listener{Store: b, OnChange: func(c Change) { heard <- c }, Ping: 200 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { l.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	expect := func(want Change) {
		t.Helper()
		select {
		case c := <-heard:
			if c != want {
				t.Fatalf("heard %+v, want %+v", c, want)
			}
		case <-time.After(time.Second):
			t.Fatalf("nothing heard within a second, want %+v", want)
		}
	}
	expect(Change{Kind: ChangeResync})
	if !l.Connected() {
		t.Fatal("listening but not Connected")
	}

	r, err := a.CreateRun(ctx, Run{Tenant: "acme", Class: "agent", TokenHash: "h1"})
	if err != nil {
		t.Fatal(err)
	}
	expect(Change{Kind: ChangeRunCreated, ID: r.ID, Origin: "replica-a"})
	if _, err := a.EndRun(ctx, r.ID, time.Time{}); err != nil {
		t.Fatal(err)
	}
	expect(Change{Kind: ChangeRunEnded, ID: r.ID, Origin: "replica-a"})
	// Ending it again changes nothing, and tells nobody.
	a.EndRun(ctx, r.ID, time.Time{})
	x, err := a.CreateAccessRequest(ctx, AccessRequest{Tenant: "acme", Host: "api.example.test", ExpiresAt: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.DecideAccessRequest(ctx, x.ID, AccessDecision{Approve: true, Reviewer: "alice"}); err != nil {
		t.Fatal(err)
	}
	expect(Change{Kind: ChangeGrants, ID: x.ID, Origin: "replica-a"})
	if err := b.Publish(ctx, Change{Kind: ChangePolicy, ID: "v2"}); err != nil {
		t.Fatal(err)
	}
	expect(Change{Kind: ChangePolicy, ID: "v2", Origin: "replica-b"})

	// Cut the listener's connection: it must come back and say resync.
	if _, err := a.DB().Exec(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE query LIKE 'LISTEN%' AND pid != pg_backend_pid()`); err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-heard:
		if c.Kind != ChangeResync {
			t.Fatalf("after a cut connection heard %+v, want a resync", c)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("no resync after the connection was cut")
	}
	a.CreateRun(ctx, Run{Tenant: "acme", Class: "agent", TokenHash: "h2"})
	if c := <-heard; c.Kind != ChangeRunCreated {
		t.Fatalf("after reconnecting heard %+v", c)
	}
}

func TestSQLiteHasNobodyToTell(t *testing.T) {
	s := MustOpen(t)
	if s.Notifies() {
		t.Fatal("SQLite claims to notify")
	}
	if err := s.Publish(context.Background(), Change{Kind: ChangePolicy}); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		(&Listener{Store: s, OnChange: func(Change) { t.Error("a change on SQLite") }}).Run(context.Background())
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(time.Second):
		t.Fatal("Listener.Run on SQLite did not return")
	}
}

func TestHeartbeat(t *testing.T) {
	eachDriver(t, func(t *testing.T, db testDB) {
		s := db.Open(t)
		ctx := context.Background()
		now := t0
		s.Now = func() time.Time { return now }
		if err := s.Heartbeat(ctx, Replica{}); err == nil {
			t.Fatal("heartbeat without an id accepted")
		}
		for _, r := range []Replica{{ID: "b", PolicyVersion: "v1"}, {ID: "a", PolicyVersion: "v1"}, {ID: "old", PolicyVersion: "v0"}} {
			if err := s.Heartbeat(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		now = t0.Add(time.Minute)
		s.Heartbeat(ctx, Replica{ID: "a", PolicyVersion: "v2"})
		s.Heartbeat(ctx, Replica{ID: "b", PolicyVersion: "v1"})
		rs, err := s.Replicas(ctx, now.Add(-10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) != 2 || rs[0].ID != "a" || rs[0].PolicyVersion != "v2" || !rs[0].Started.Equal(t0) || !rs[0].Seen.Equal(now) || rs[1].ID != "b" {
			t.Fatalf("replicas %+v", rs)
		}
		now = t0.Add(25 * time.Hour)
		s.Heartbeat(ctx, Replica{ID: "a", PolicyVersion: "v2"})
		if rs, _ := s.Replicas(ctx, time.Time{}); len(rs) != 1 {
			t.Fatalf("after a day %+v: silent replicas not dropped", rs)
		}
	})
}
