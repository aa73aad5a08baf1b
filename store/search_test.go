package store

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/sluice-egress/sluice/incident"
)

func triageFixture(t *testing.T, s *Store, base time.Time) {
	t.Helper()
	var ins []incident.Incident
	for i := range 20 {
		ins = append(ins, incident.Incident{ID: fmt.Sprintf("inc_pat%02d", i), Time: base.Add(time.Duration(i) * time.Second),
			Tenant: "acme", Kind: "secret", Reason: "secret-detected", Action: "block", Host: "Paste.Example.test",
			Path: "/api/upload", Rule: "github-pat", Fingerprint: "fp-same"})
	}
	ins = append(ins,
		incident.Incident{ID: "inc_deny", Time: base.Add(time.Minute), Tenant: "acme", Kind: "deny", Reason: "host-not-allowed",
			Action: "block", Host: "other.example.test", Run: "run_01ABC"},
		incident.Incident{ID: "inc_addr", Time: base.Add(2 * time.Minute), Tenant: "globex", Kind: "deny", Reason: "address-refused",
			Action: "block", Host: "10.0.0.1", Path: "/100%_off"})
	if err := s.InsertIncidents(context.Background(), ins); err != nil {
		t.Fatal(err)
	}
}

func TestSearchGroupBulkTriage(t *testing.T) {
	eachDriver(t, func(t *testing.T, db testDB) {
		s, ctx := db.Open(t), context.Background()
		base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		triageFixture(t, s, base)
		count := func(f IncidentFilter) int64 {
			t.Helper()
			n, err := s.CountIncidents(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		// Partial, case-insensitive, over host, path, rule and run.
		for q, want := range map[string]int64{"paste.EXAMPLE": 20, "upload": 20, "hub-p": 20, "01abc": 1, "example.test": 21,
			"100%": 1, "100_": 0, "%": 1, "nothing-like-this": 0} {
			if n := count(IncidentFilter{Search: q}); n != want {
				t.Errorf("search %q: %d, want %d", q, n, want)
			}
		}
		if n := count(IncidentFilter{Reason: "address-refused"}); n != 1 {
			t.Errorf("reason filter: %d", n)
		}
		// Twenty identical rows are one group.
		gs, err := s.GroupIncidents(ctx, IncidentFilter{Tenant: "acme"}, "fingerprint", 0)
		if err != nil || len(gs) != 1 || gs[0].Key != "fp-same" || gs[0].Count != 20 || gs[0].New != 20 {
			t.Fatalf("groups %+v %v", gs, err)
		}
		if _, err := s.GroupIncidents(ctx, IncidentFilter{}, "snippet; DROP TABLE incidents", 0); !errors.Is(err, ErrInvalid) {
			t.Fatalf("group by anything: %v", err)
		}
		// Sorted listing pages by offset.
		p, err := s.ListIncidents(ctx, IncidentFilter{Sort: "host", Asc: true, Limit: 2})
		if err != nil || len(p.Incidents) != 2 || p.Incidents[0].Host != "10.0.0.1" || p.Next != "2" {
			t.Fatalf("sorted %+v %v", p, err)
		}
		if _, err := s.ListIncidents(ctx, IncidentFilter{Sort: "snippet"}); !errors.Is(err, ErrInvalid) {
			t.Fatalf("sort by anything: %v", err)
		}
		old, err := s.ListIncidents(ctx, IncidentFilter{Asc: true, Limit: 1})
		if err != nil || old.Incidents[0].ID != "inc_pat00" {
			t.Fatalf("oldest first %+v %v", old, err)
		}
		// Bulk triage of the group, one note; a refused tenant fails all.
		ids, err := s.MatchingIDs(ctx, IncidentFilter{Fingerprint: "fp-same"})
		if err != nil || len(ids) != 20 {
			t.Fatalf("ids %d %v", len(ids), err)
		}
		u := TriageUpdate{State: incident.TriageFalsePositive, Note: "test fixture", Actor: "rex"}
		onlyAcme := func(t string) bool { return t == "acme" }
		if _, err := s.TriageIncidents(ctx, append(ids, "inc_addr"), u, onlyAcme); !errors.Is(err, ErrNotFound) {
			t.Fatalf("bulk with another tenant's incident: %v", err)
		}
		if n := count(IncidentFilter{Triage: incident.TriageNew}); n != 22 {
			t.Fatalf("a refused bulk triage changed something: %d new", n)
		}
		if n, err := s.TriageIncidents(ctx, ids, u, onlyAcme); err != nil || n != 20 {
			t.Fatalf("bulk: %d %v", n, err)
		}
		if n := count(IncidentFilter{Triage: incident.TriageFalsePositive, Search: "test fixture"}); n != 20 {
			t.Fatalf("after bulk: %d false positives with the note", n)
		}
		h, err := s.TriageHistory(ctx, ids[3])
		if err != nil || len(h) != 1 || h[0].Note != "test fixture" {
			t.Fatalf("history %+v %v", h, err)
		}
		// All twenty are recent false positives of github-pat: a rising rule.
		tr, err := s.RisingFalsePositives(ctx, "", base.Add(time.Hour), 24*time.Hour)
		if err != nil || len(tr) != 1 || tr[0].Rule != "github-pat" || tr[0].Recent != 20 {
			t.Fatalf("rising %+v %v", tr, err)
		}
		ch, err := s.Choices(ctx, IncidentFilter{}, "reason", 10)
		if err != nil || len(ch) != 3 {
			t.Fatalf("choices %+v %v", ch, err)
		}
		all, err := s.AllChoices(ctx, IncidentFilter{Tenant: "acme"}, 10)
		if err != nil || len(all["reason"]) != 2 || all["reason"][0] != (KeyCount{"secret-detected", 20}) ||
			len(all["tenant"]) != 1 || len(all["run"]) != 1 || len(all["class"]) != 0 {
			t.Fatalf("all choices %+v %v", all, err)
		}
	})
}
