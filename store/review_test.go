package store

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestAccessContext: a filed request keeps its run, class and refusal; a
// filing for the same thing from the same run finds it; a reviewer's scope
// replaces what it grants, only while pending.
func TestAccessContext(t *testing.T) {
	eachDriver(t, func(t *testing.T, db testDB) {
		ctx := context.Background()
		s := db.Open(t)
		exp := time.Now().Add(time.Hour)
		x, err := s.CreateAccessRequest(ctx, AccessRequest{Tenant: "acme", Host: "held.example.test", Ports: []int{443}, Justification: "docs", ExpiresAt: exp})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.SetAccessContext(ctx, AccessContext{ID: x.ID, Run: "r-1", Class: "agent", Incident: "inc_1", Scope: ScopeRun}); err != nil {
			t.Fatal(err)
		}
		if err := s.SetAccessContext(ctx, AccessContext{ID: x.ID, Scope: "galaxy"}); !errors.Is(err, ErrInvalid) {
			t.Fatalf("bad scope: %v", err)
		}
		got, ok, err := s.FindPendingAccess(ctx, "acme", "r-1", AccessRequest{Host: "held.example.test", Ports: []int{443}})
		if err != nil || !ok || got.ID != x.ID {
			t.Fatalf("find: %+v %v %v", got, ok, err)
		}
		for _, miss := range []struct {
			tenant, run string
			want        AccessRequest
		}{
			{"acme", "r-2", AccessRequest{Host: "held.example.test", Ports: []int{443}}},
			{"globex", "r-1", AccessRequest{Host: "held.example.test", Ports: []int{443}}},
			{"acme", "r-1", AccessRequest{Host: "held.example.test", Ports: []int{8443}}},
			{"acme", "r-1", AccessRequest{Host: "held.example.test", Ports: []int{443}, Methods: []string{"GET"}}},
		} {
			if _, ok, _ := s.FindPendingAccess(ctx, miss.tenant, miss.run, miss.want); ok {
				t.Errorf("%+v found another's request", miss)
			}
		}
		if err := s.JoinAccessRequest(ctx, x.ID, true); err != nil {
			t.Fatal(err)
		}
		c, err := s.GetAccessContext(ctx, x.ID)
		if err != nil || c.Run != "r-1" || c.Class != "agent" || c.Joined != 2 || c.Held != 1 || c.Incident != "inc_1" {
			t.Fatalf("context %+v %v", c, err)
		}
		if n, err := s.CountPendingAccess(ctx, "acme"); err != nil || n != 1 {
			t.Fatalf("count %d %v", n, err)
		}
		later := time.Now().Add(2 * time.Hour).Truncate(time.Second)
		if err := s.ScopeAccessRequest(ctx, x.ID, AccessScope{Ports: []int{443}, Methods: []string{"GET"}, Paths: []string{"/docs/"}, ExpiresAt: later, Scope: ScopeClass}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.DecideAccessRequest(ctx, x.ID, AccessDecision{Approve: true, Reviewer: "rev"}); err != nil {
			t.Fatal(err)
		}
		a, _ := s.GetAccessRequest(ctx, x.ID)
		cs, err := s.AccessContexts(ctx, []string{x.ID, "ar_none"})
		if err != nil || len(cs) != 1 || cs[x.ID].Scope != ScopeClass || cs[x.ID].Run != "r-1" {
			t.Fatalf("contexts %+v %v", cs, err)
		}
		if len(a.Methods) != 1 || a.Paths[0] != "/docs/" || !a.ExpiresAt.Equal(later) {
			t.Fatalf("scoped request %+v", a)
		}
		if err := s.ScopeAccessRequest(ctx, x.ID, AccessScope{ExpiresAt: later, Scope: ScopeTenant}); !errors.Is(err, ErrConflict) {
			t.Fatalf("re-scoping a decided request: %v", err)
		}
	})
}

// TestObservations: batches add up, and a tenant keeps at most max rows, the
// least recently seen going first.
func TestObservations(t *testing.T) {
	eachDriver(t, func(t *testing.T, db testDB) {
		ctx := context.Background()
		s := db.Open(t)
		o := func(host string, at time.Time, n int64) Observation {
			return Observation{Tenant: "acme", Class: "agent", Run: "r-1", Host: host, Port: 443, Method: "GET", Path: "/",
				Verdict: ObservedAllowed, Count: n, FirstSeen: at, LastSeen: at}
		}
		if err := s.RecordObservations(ctx, []Observation{o("a.example.test", t0, 2), o("b.example.test", t0.Add(time.Minute), 1)}, 0); err != nil {
			t.Fatal(err)
		}
		if err := s.RecordObservations(ctx, []Observation{o("a.example.test", t0.Add(time.Hour), 3)}, 0); err != nil {
			t.Fatal(err)
		}
		got, err := s.ListObservations(ctx, ObservationFilter{Tenant: "acme"})
		if err != nil || len(got) != 2 || got[0].Host != "a.example.test" || got[0].Count != 5 ||
			!got[0].FirstSeen.Equal(t0) || !got[0].LastSeen.Equal(t0.Add(time.Hour)) {
			t.Fatalf("observations %+v %v", got, err)
		}
		// A batch seen earlier than the row (another replica's, late) moves
		// first_seen back and leaves last_seen.
		if err := s.RecordObservations(ctx, []Observation{o("a.example.test", t0.Add(-time.Minute), 1)}, 0); err != nil {
			t.Fatal(err)
		}
		got, err = s.ListObservations(ctx, ObservationFilter{Tenant: "acme"})
		if err != nil || len(got) != 2 || got[0].Count != 6 ||
			!got[0].FirstSeen.Equal(t0.Add(-time.Minute)) || !got[0].LastSeen.Equal(t0.Add(time.Hour)) {
			t.Fatalf("observations after a late batch %+v %v", got, err)
		}
		if got, _ := s.ListObservations(ctx, ObservationFilter{Tenant: "globex"}); len(got) != 0 {
			t.Fatal("another tenant sees acme's observations")
		}
		if got, _ := s.ListObservations(ctx, ObservationFilter{Tenant: "acme", Since: t0.Add(30 * time.Minute)}); len(got) != 1 {
			t.Fatalf("since: %+v", got)
		}
		// Bound: with max 1, only the most recently seen stays.
		if err := s.RecordObservations(ctx, []Observation{o("c.example.test", t0.Add(2*time.Hour), 1)}, 1); err != nil {
			t.Fatal(err)
		}
		got, _ = s.ListObservations(ctx, ObservationFilter{Tenant: "acme"})
		if len(got) != 1 || got[0].Host != "c.example.test" {
			t.Fatalf("after trimming: %+v", got)
		}
	})
}

// TestObservationWriter: Adds are counted in memory and land on Close.
func TestObservationWriter(t *testing.T) {
	eachDriver(t, func(t *testing.T, db testDB) {
		s := db.Open(t)
		w := &ObservationWriter{Store: s, Interval: time.Hour}
		for range 3 {
			w.Add(Observation{Tenant: "acme", Class: "agent", Host: "a.example.test", Port: 443, Method: "GET", Path: "/", Verdict: ObservedAllowed})
		}
		if err := w.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		got, err := s.ListObservations(context.Background(), ObservationFilter{Tenant: "acme"})
		if err != nil || len(got) != 1 || got[0].Count != 3 {
			t.Fatalf("%+v %v", got, err)
		}
		if err := (&ObservationWriter{Store: s}).Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}
