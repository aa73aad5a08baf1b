package incidentsink

import (
	"context"
	"database/sql"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-egress/sluice/gateway"
	"github.com/sluice-egress/sluice/incident"
	"github.com/sluice-egress/sluice/store"
)

// TestEmitBoundedWhenStoreStalls: a store that cannot commit (another
// process holds its write lock) makes Emit fail within the sink's Timeout,
// counted, instead of holding the request; once the lock is gone, incidents
// are stored again.
func TestEmitBoundedWhenStoreStalls(t *testing.T) {
	path := filepath.Join(t.TempDir(), store.FileName)
	st, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	w := &store.Writer{Store: st}
	defer w.Close(context.Background())
	var unrecorded atomic.Int64
	k := &Sink{Writer: w, Timeout: 200 * time.Millisecond, OnUnrecorded: func() { unrecorded.Add(1) }}

	// Another connection takes the write lock and keeps it.
	db, err := sql.Open("sqlite", "file:"+path+"?_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	id, err := k.Emit(context.Background(), incident.Incident{Tenant: "acme", Reason: "host-not-allowed", Kind: "deny", Action: "block"})
	took := time.Since(start)
	if err == nil || id != "" {
		t.Fatalf("Emit on a stalled store = %q, %v; want an error", id, err)
	}
	if took > 2*time.Second {
		t.Fatalf("Emit took %v on a stalled store; its bound is 200ms", took)
	}
	if unrecorded.Load() != 1 {
		t.Fatalf("unrecorded counted %d times, want 1", unrecorded.Load())
	}
	tx.Rollback()

	k.Timeout = 30 * time.Second
	id, err = k.Emit(context.Background(), incident.Incident{Tenant: "acme", Reason: "host-not-allowed", Kind: "deny", Action: "block"})
	if err != nil || id == "" {
		t.Fatalf("Emit after the stall = %q, %v", id, err)
	}
	if _, err := st.GetIncident(context.Background(), id); err != nil {
		t.Fatalf("incident %s not stored: %v", id, err)
	}
}

// TestUnauthenticatedRefusalsAreNotStored: a 407 is counted, never stored,
// so whoever knocks (health checks, port scanners) cannot fill the
// database; an authenticated refusal is stored, without its query string.
func TestUnauthenticatedRefusalsAreNotStored(t *testing.T) {
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), store.FileName))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	w := &store.Writer{Store: st}
	k := &Sink{Writer: w}
	if id, err := k.Emit(context.Background(), incident.Incident{Reason: gateway.ReasonAuthRequired, Kind: "deny", Action: "block"}); id != "" || err != nil {
		t.Fatalf("a 407 became incident %s (%v)", id, err)
	}
	id, _ := k.Emit(context.Background(), incident.Incident{Tenant: "acme", Reason: "host-not-allowed", Kind: "deny", Path: "/raw?q=1"})
	w.Close(context.Background())
	in, err := st.GetIncident(context.Background(), id)
	if err != nil || in.Path != "/raw" {
		t.Fatalf("stored %+v %v", in, err)
	}
}

// Tagged probes are left out of the store within a budget, not beyond it: the tag is
// no way to hide denied attempts.
func TestProbeBudget(t *testing.T) {
	var b probeBudget
	n := 0
	for range 3 * probeBurst {
		if b.skip("acme") {
			n++
		}
	}
	if n < probeBurst || n > probeBurst+1 {
		t.Fatalf("%d of %d probes unstored, want the budget %d", n, 3*probeBurst, probeBurst)
	}
	if !b.skip("globex") {
		t.Fatal("one tenant's probes used another's budget")
	}
}
