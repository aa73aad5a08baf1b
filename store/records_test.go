package store

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestRuns(t *testing.T) {
	eachDriver(t, func(t *testing.T, db testDB) {
		s := db.Open(t)
		ctx := context.Background()
		now := t0
		s.Now = func() time.Time { return now }
		r, err := s.CreateRun(ctx, Run{Tenant: "acme", Class: "agent", TokenHash: "h1", Expires: t0.Add(time.Hour),
			RepoRemote: "https://git.example.test/demo.git", Manifests: json.RawMessage(`["go.mod"]`)})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(r.ID, PrefixRun) || !r.Created.Equal(t0) || string(r.Extra) != "[]" {
			t.Fatalf("created %+v", r)
		}
		got, err := s.GetRun(ctx, r.ID)
		if err != nil || got.RepoRemote != r.RepoRemote || string(got.Manifests) != `["go.mod"]` || !got.Expires.Equal(r.Expires) {
			t.Fatalf("get: %+v %v", got, err)
		}
		if got, err := s.RunByTokenHash(ctx, "h1"); err != nil || got.ID != r.ID {
			t.Fatalf("by token hash: %+v %v", got, err)
		}
		r2, _ := s.CreateRun(ctx, Run{Tenant: "globex", Class: "validation", TokenHash: "h2"})
		if _, err := s.CreateRun(ctx, Run{Tenant: "acme", Class: "agent", TokenHash: "h1"}); err == nil {
			t.Fatal("a second run with the same token hash was accepted")
		}
		for name, bad := range map[string]Run{
			"no token hash": {Tenant: "acme", Class: "agent"},
			"bad json":      {Tenant: "acme", Class: "agent", TokenHash: "h3", Extra: json.RawMessage(`{`)},
		} {
			if _, err := s.CreateRun(ctx, bad); !errors.Is(err, ErrInvalid) {
				t.Errorf("%s: %v", name, err)
			}
		}
		if l, _ := s.ListRuns(ctx, RunFilter{Active: true}); len(l) != 2 {
			t.Fatalf("active runs %+v", l)
		}
		ended, err := s.EndRun(ctx, r2.ID, time.Time{})
		if err != nil || !ended.Ended.Equal(t0) {
			t.Fatalf("end: %+v %v", ended, err)
		}
		now = t0.Add(2 * time.Hour) // r expired
		if l, _ := s.ListRuns(ctx, RunFilter{Active: true}); len(l) != 0 {
			t.Fatalf("active runs after end and expiry %+v", l)
		}
		if l, _ := s.ListRuns(ctx, RunFilter{Tenant: "acme"}); len(l) != 1 || l[0].ID != r.ID {
			t.Fatalf("acme runs %+v", l)
		}
		if _, err := s.EndRun(ctx, "run_nope", time.Time{}); !errors.Is(err, ErrNotFound) {
			t.Fatalf("end unknown run: %v", err)
		}
	})
}

func TestAccessRequests(t *testing.T) {
	eachDriver(t, func(t *testing.T, db testDB) {
		s := db.Open(t)
		ctx := context.Background()
		now := t0
		s.Now = func() time.Time { return now }
		mk := func(host string, exp time.Duration) AccessRequest {
			t.Helper()
			a, err := s.CreateAccessRequest(ctx, AccessRequest{Tenant: "acme", Host: host, Ports: []int{443},
				Methods: []string{"GET"}, Justification: "docs", ExpiresAt: t0.Add(exp)})
			if err != nil {
				t.Fatal(err)
			}
			return a
		}
		a := mk("docs.example.test", 24*time.Hour)
		b := mk("pkg.example.test", 24*time.Hour)
		c := mk("short.example.test", time.Minute)
		if a.State != AccessPending || !strings.HasPrefix(a.ID, PrefixAccess) {
			t.Fatalf("created %+v", a)
		}
		if got, err := s.GetAccessRequest(ctx, a.ID); err != nil || got.Host != a.Host || len(got.Ports) != 1 || got.Paths == nil {
			t.Fatalf("get %+v %v", got, err)
		}
		if _, err := s.CreateAccessRequest(ctx, AccessRequest{Tenant: "acme"}); !errors.Is(err, ErrInvalid) {
			t.Fatalf("request without host: %v", err)
		}

		now = t0.Add(time.Hour)
		got, err := s.DecideAccessRequest(ctx, a.ID, AccessDecision{Approve: true, Reviewer: "alice", Reason: "ok"})
		if err != nil || got.State != AccessApproved || got.Reviewer != "alice" || !got.DecidedAt.Equal(now) {
			t.Fatalf("approve: %+v %v", got, err)
		}
		if _, err := s.DecideAccessRequest(ctx, a.ID, AccessDecision{Reviewer: "mallory"}); !errors.Is(err, ErrConflict) {
			t.Fatalf("second decision: %v", err)
		}
		if got, _ := s.DecideAccessRequest(ctx, b.ID, AccessDecision{Reviewer: "bob"}); got.State != AccessDenied {
			t.Fatalf("deny: %+v", got)
		}
		if got, err := s.DecideAccessRequest(ctx, c.ID, AccessDecision{Approve: true, Reviewer: "bob"}); !errors.Is(err, ErrConflict) || got.State != AccessExpired {
			t.Fatalf("approve after expiry: %+v %v", got, err)
		}
		if _, err := s.DecideAccessRequest(ctx, a.ID, AccessDecision{}); !errors.Is(err, ErrInvalid) {
			t.Fatalf("decision without reviewer: %v", err)
		}

		grants, err := s.ActiveGrants(ctx, now)
		if err != nil || len(grants) != 1 || grants[0].ID != a.ID {
			t.Fatalf("grants %+v %v", grants, err)
		}
		if l, _ := s.ListAccessRequests(ctx, AccessFilter{Tenant: "acme", State: AccessPending}); len(l) != 0 {
			t.Fatalf("pending %+v", l)
		}
		if l, _ := s.ListAccessRequests(ctx, AccessFilter{Tenant: "acme"}); len(l) != 3 {
			t.Fatalf("all %+v", l)
		}
		audit, _ := s.ListAudit(ctx, AuditFilter{Tenant: "acme"})
		if len(audit) != 2 || audit[0].Action != "access.denied" || audit[1].Action != "access.approved" {
			t.Fatalf("audit %+v", audit)
		}

		// After the grant's expiry: no longer active, and marked expired.
		later := t0.Add(25 * time.Hour)
		if g, _ := s.ActiveGrants(ctx, later); len(g) != 0 {
			t.Fatalf("expired grants still active: %+v", g)
		}
		if n, err := s.ExpireAccessRequests(ctx, later); err != nil || n != 1 {
			t.Fatalf("expire: %d %v", n, err)
		}
		if got, _ := s.GetAccessRequest(ctx, a.ID); got.State != AccessExpired {
			t.Fatalf("after expiry %+v", got)
		}
	})
}

func TestAuditLogIsAppendOnly(t *testing.T) {
	eachDriver(t, func(t *testing.T, db testDB) {
		s := db.Open(t)
		ctx := context.Background()
		var ids []int64
		for _, a := range []string{"config.reload", "incident.triage", "access.approved"} {
			id, err := s.AppendAudit(ctx, AuditEntry{Actor: "alice", Action: a, Tenant: "acme", Target: "x"})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		if _, err := s.AppendAudit(ctx, AuditEntry{Action: "x"}); !errors.Is(err, ErrInvalid) {
			t.Fatalf("entry without actor: %v", err)
		}
		l, err := s.ListAudit(ctx, AuditFilter{Limit: 2})
		if err != nil || len(l) != 2 || l[0].ID != ids[2] || l[0].Time.IsZero() {
			t.Fatalf("list %+v %v", l, err)
		}
		if l, _ := s.ListAudit(ctx, AuditFilter{Before: l[1].ID}); len(l) != 1 || l[0].ID != ids[0] {
			t.Fatalf("next page %+v", l)
		}
		refused := []string{
			"UPDATE audit_log SET actor = 'mallory'",
			"DELETE FROM audit_log",
			"DELETE FROM audit_log WHERE id = 1",
			"UPDATE audit_log SET detail = '' WHERE id = 2",
		}
		if s.Driver() == Postgres {
			refused = append(refused, "TRUNCATE audit_log")
		}
		for _, q := range refused {
			if _, err := s.DB().Exec(q); err == nil || !strings.Contains(err.Error(), "append-only") {
				t.Errorf("%s: %v", q, err)
			}
		}
		var n int
		s.DB().QueryRow("SELECT COUNT(*) FROM audit_log WHERE actor = 'alice'").Scan(&n)
		if n != 3 {
			t.Fatalf("%d entries left intact, want 3", n)
		}
	})
}
