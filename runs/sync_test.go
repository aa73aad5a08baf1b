package runs_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluice-egress/sluice/runs"
	"github.com/sluice-egress/sluice/store"
)

// TestReplicasShareRuns: two services on one store, as two replicas. What
// one does to a run, the other applies when told (SyncRun), when it
// resyncs, or when the run's token is first used on it (LookupToken).
func TestReplicasShareRuns(t *testing.T) {
	a := newWorld(t)
	b := newReplica(t, a)
	ctx := context.Background()
	create := func() runs.Created {
		t.Helper()
		c, err := a.svc.CreateRun(ctx, runs.Request{Tenant: "acme", Class: "agent", TTL: time.Hour, Actor: "ada"})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}

	t.Run("a token first used on the other replica", func(t *testing.T) {
		c := create()
		if b.works(c) {
			t.Fatal("b knows a's run before anything told it")
		}
		if !b.svc.LookupToken(ctx, c.Token) || !b.works(c) {
			t.Fatal("lookup did not register the run")
		}
		if b.svc.LookupToken(ctx, c.Token) {
			t.Fatal("a registered run registered again")
		}
	})

	t.Run("unknown tokens are looked up once", func(t *testing.T) {
		before := b.store.byToken
		for range 5 {
			if b.svc.LookupToken(ctx, "not-a-token-of-any-run-0123456789") {
				t.Fatal("an unknown token registered a run")
			}
		}
		if n := b.store.byToken - before; n != 1 {
			t.Fatalf("%d store reads for one unknown token, want 1", n)
		}
	})

	t.Run("a notified run, then its end", func(t *testing.T) {
		c := create()
		if err := b.svc.SyncRun(ctx, c.Run.ID); err != nil || !b.works(c) {
			t.Fatalf("after SyncRun: works %v, %v", b.works(c), err)
		}
		closed := b.gw.closed.Load()
		if _, err := a.svc.EndRun(ctx, c.Run.ID, "ada"); err != nil {
			t.Fatal(err)
		}
		if !b.works(c) {
			t.Fatal("b dropped the run before it was told")
		}
		if err := b.svc.SyncRun(ctx, c.Run.ID); err != nil || b.works(c) || b.gw.closed.Load() != closed+1 {
			t.Fatalf("after the end: works %v, tunnels closed %d times, %v", b.works(c), b.gw.closed.Load()-closed, err)
		}
		// Both replicas' sweeps may end an expired run: one audit entry.
		if _, err := b.svc.EndRun(ctx, c.Run.ID, "sluice (ttl)"); err != nil {
			t.Fatal(err)
		}
		ends := 0
		log, _ := a.st.ListAudit(ctx, store.AuditFilter{Limit: 1000})
		for _, e := range log {
			if e.Action == "run.ended" && e.Target == c.Run.ID {
				ends++
			}
		}
		if ends != 1 {
			t.Fatalf("%d run.ended entries for one run", ends)
		}
	})

	t.Run("resync catches up with what was missed", func(t *testing.T) {
		kept, gone, fresh := create(), create(), runs.Created{}
		b.svc.SyncRun(ctx, kept.Run.ID)
		b.svc.SyncRun(ctx, gone.Run.ID)
		a.svc.EndRun(ctx, gone.Run.ID, "ada")
		fresh = create()
		if err := b.svc.Resync(ctx); err != nil {
			t.Fatal(err)
		}
		if !b.works(kept) || b.works(gone) || !b.works(fresh) {
			t.Fatalf("after resync: kept %v, ended %v, new %v", b.works(kept), b.works(gone), b.works(fresh))
		}
	})
}

// TestExpiriesCloseTunnelsAtOnce: a run's TTL and a grant's expiry close
// their tunnels when they pass, not at the next sweep (an hour away here).
func TestExpiriesCloseTunnelsAtOnce(t *testing.T) {
	w := newWorld(t)
	w.svc.Interval = time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.svc.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	within := func(what string, d time.Duration, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(d); !ok(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within %v", what, d)
			}
		}
	}
	c, err := w.svc.CreateRun(ctx, runs.Request{Tenant: "acme", Class: "agent", TTL: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	expiry := c.Run.Expires
	within("run ended after its TTL", time.Until(expiry)+time.Second, func() bool { return w.gw.closed.Load() == 1 })
	if time.Now().Before(expiry) {
		t.Fatal("run ended before its TTL")
	}

	x, err := w.st.CreateAccessRequest(ctx, store.AccessRequest{Tenant: "acme", Host: "pkg.example.test",
		ExpiresAt: time.Now().Add(500 * time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.svc.DecideAccess(ctx, runs.Decision{ID: x.ID, Approve: true, Reviewer: "rex"}); err != nil {
		t.Fatal(err)
	}
	within("tunnels re-checked after the grant expired", 2*time.Second, func() bool { return w.gw.rechecked.Load() == 1 })
	if time.Now().Before(x.ExpiresAt) {
		t.Fatal("re-checked before the grant expired")
	}
}
