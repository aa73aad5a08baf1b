package runs_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/sluice-egress/sluice/rules"
	"github.com/sluice-egress/sluice/runs"
)

func newReviewWorld(t *testing.T) (*world, runs.Created, runs.Created) {
	t.Helper()
	w := newWorld(t)
	w.svc.Review = w.store
	var err error
	mk := func() runs.Created {
		c, e := w.svc.CreateRun(context.Background(), runs.Request{Tenant: "acme", Class: "agent", TTL: time.Hour})
		if e != nil {
			err = e
		}
		return c
	}
	a, b := mk(), mk()
	if err != nil {
		t.Fatal(err)
	}
	return w, a, b
}

func filing(c runs.Created, host string) runs.Filing {
	return runs.Filing{Tenant: "acme", Class: "agent", Run: c.Run.ID, Host: host, Ports: []int{443}, Reason: "docs"}
}

// Filings for the same thing from the same run collapse into one request;
// a run may file only so many new ones; a bad one is refused.
func TestFileAccess(t *testing.T) {
	w, a, b := newReviewWorld(t)
	w.svc.FilingBurst, w.svc.FilingEvery = 2, time.Hour
	ctx := context.Background()
	var seen []string
	var mu sync.Mutex
	w.svc.OnAccess = func(x runs.AccessRequest, c runs.AccessContext) {
		mu.Lock()
		seen = append(seen, x.ID)
		mu.Unlock()
	}
	first, err := w.svc.FileAccess(ctx, filing(a, "one.example.test"))
	if err != nil || first.Joined || first.Context.Run != a.Run.ID || first.Context.Scope != runs.ScopeRun {
		t.Fatalf("first: %+v %v", first, err)
	}
	again, err := w.svc.FileAccess(ctx, filing(a, "one.example.test"))
	if err != nil || !again.Joined || again.Request.ID != first.Request.ID || again.Context.Joined != 2 {
		t.Fatalf("again: %+v %v", again, err)
	}
	// Another run asking for the same host gets its own request.
	other, err := w.svc.FileAccess(ctx, filing(b, "one.example.test"))
	if err != nil || other.Request.ID == first.Request.ID {
		t.Fatalf("other run: %+v %v", other, err)
	}
	if _, err := w.svc.FileAccess(ctx, filing(a, "two.example.test")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.svc.FileAccess(ctx, filing(a, "three.example.test")); !errors.Is(err, runs.ErrLimited) {
		t.Fatalf("third new filing of a run with a burst of 2: %v", err)
	}
	// Joining costs nothing: the queue does not grow.
	if _, err := w.svc.FileAccess(ctx, filing(a, "one.example.test")); err != nil {
		t.Fatalf("join after the limit: %v", err)
	}
	for name, f := range map[string]runs.Filing{
		"no reason":     {Tenant: "acme", Run: b.Run.ID, Host: "x.example.test"},
		"bad host":      {Tenant: "acme", Run: b.Run.ID, Host: "*.com", Reason: "r"},
		"internal host": {Tenant: "acme", Run: b.Run.ID, Host: "metadata.google.internal", Reason: "r", Ports: []int{0}},
	} {
		if _, err := w.svc.FileAccess(ctx, f); !errors.Is(err, runs.ErrInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 5 {
		t.Errorf("OnAccess told of %d filings, want 5", len(seen))
	}
}

// A held connection waits for the decision: an approval for its run lets
// the run through at once and no other run; a denial ends the wait too.
func TestAwaitAccess(t *testing.T) {
	w, a, b := newReviewWorld(t)
	ctx := context.Background()
	type result struct {
		x   runs.AccessRequest
		err error
	}
	done := make(chan result, 1)
	filed := make(chan string, 1)
	w.svc.OnAccess = func(x runs.AccessRequest, _ runs.AccessContext) {
		if x.State == "pending" {
			select {
			case filed <- x.ID:
			default:
			}
		}
	}
	go func() {
		f := filing(a, "held.example.test")
		f.Reason = ""
		x, err := w.svc.AwaitAccess(ctx, f)
		done <- result{x, err}
	}()
	id := <-filed
	start := time.Now()
	if _, err := w.svc.ApproveScoped(ctx, runs.Decision{ID: id, Reviewer: "rev", Reason: "ok"}, runs.Scope{TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.x.State != "approved" || time.Since(start) > time.Second {
		t.Fatalf("await: %+v %v after %s", r.x, r.err, time.Since(start))
	}
	decide := func(run string) rules.Action {
		return w.engine.Decide(rules.Query{Identity: rules.Identity{Tenant: "acme", Class: "agent", Run: run},
			Host: "held.example.test", Port: 443, Stage: rules.StageConnect}).Action
	}
	if decide(a.Run.ID) != rules.Inspect {
		t.Fatal("the approved run is still refused")
	}
	if decide(b.Run.ID) != rules.Deny {
		t.Fatal("a run-scoped grant let another run through")
	}

	// Denial: the wait ends at once with the denial.
	go func() {
		x, err := w.svc.AwaitAccess(ctx, filing(b, "nope.example.test"))
		done <- result{x, err}
	}()
	id = <-filed
	if _, err := w.svc.DecideAccess(ctx, runs.Decision{ID: id, Reviewer: "rev", Reason: "no"}); err != nil {
		t.Fatal(err)
	}
	if r := <-done; r.err != nil || r.x.State != "denied" {
		t.Fatalf("denied await: %+v %v", r.x, r.err)
	}

	// Timeout: the context ends the wait.
	tctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := w.svc.AwaitAccess(tctx, filing(b, "slow.example.test")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("timeout: %v", err)
	}
}

// Scopes: a permanent grant is for a class or tenant, never a run; a class
// grant opens the class for every run.
func TestApproveScoped(t *testing.T) {
	w, a, b := newReviewWorld(t)
	ctx := context.Background()
	f, err := w.svc.FileAccess(ctx, filing(a, "docs.example.test"))
	if err != nil {
		t.Fatal(err)
	}
	d := runs.Decision{ID: f.Request.ID, Reviewer: "rev"}
	if _, err := w.svc.ApproveScoped(ctx, d, runs.Scope{Permanent: true}); !errors.Is(err, runs.ErrInvalid) {
		t.Fatalf("permanent for a run: %v", err)
	}
	if _, err := w.svc.ApproveScoped(ctx, d, runs.Scope{Scope: "galaxy"}); !errors.Is(err, runs.ErrInvalid) {
		t.Fatalf("bad scope: %v", err)
	}
	x, err := w.svc.ApproveScoped(ctx, d, runs.Scope{Scope: runs.ScopeClass, Permanent: true, Methods: []string{"GET"}, Paths: []string{"/docs/"}})
	if err != nil || x.State != "approved" || x.ExpiresAt.Before(time.Now().Add(50*365*24*time.Hour)) {
		t.Fatalf("approve: %+v %v", x, err)
	}
	for _, run := range []string{a.Run.ID, b.Run.ID} {
		id := rules.Identity{Tenant: "acme", Class: "agent", Run: run}
		ok := w.engine.Decide(rules.Query{Identity: id, Host: "docs.example.test", Port: 443, Method: "GET", Path: "/docs/x", Stage: rules.StageRequest})
		no := w.engine.Decide(rules.Query{Identity: id, Host: "docs.example.test", Port: 443, Method: "POST", Path: "/docs/x", Stage: rules.StageRequest})
		if ok.Action != rules.Allow || no.Action != rules.Deny {
			t.Fatalf("run %s: GET %v, POST %v", run, ok.Action, no.Action)
		}
	}
}
