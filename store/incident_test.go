package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluice-egress/sluice/incident"
)

func TestIncidentRoundTrip(t *testing.T) {
	eachDriver(t, func(t *testing.T, db testDB) {
		s := db.Open(t)
		ctx := context.Background()
		in := incident.Incident{
			ID: NewID(PrefixIncident, t0), Time: t0.Add(123 * time.Nanosecond), Tenant: "acme", Class: "agent", Run: "run_1",
			Kind: "secret", Reason: "secret-detected", Action: "block", Host: "api.example.test", Port: 443,
			Method: "POST", Path: "/v1/chat", Client: "10.0.0.2:5555", Rule: "github-pat", Where: "header:Authorization",
			Decoding: "base64", Snippet: "ghp_****", Fingerprint: "fp1",
		}
		MustInsert(t, s, in)
		got, err := s.GetIncident(ctx, in.ID)
		if err != nil {
			t.Fatal(err)
		}
		want := in
		want.Triage.State = incident.TriageNew
		if got != want {
			t.Fatalf("got  %+v\nwant %+v", got, want)
		}
		if _, err := s.GetIncident(ctx, "inc_nope"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("unknown id: %v", err)
		}
		if err := s.InsertIncidents(ctx, []incident.Incident{{Tenant: "acme"}}); !errors.Is(err, ErrInvalid) {
			t.Fatalf("incident without id: %v", err)
		}
		if err := s.InsertIncidents(ctx, []incident.Incident{in}); err == nil {
			t.Fatal("duplicate id accepted")
		}
	})
}

// TestHostileTextIsStored: an incident's text comes from the sandbox.
// PostgreSQL refuses NUL bytes and invalid UTF-8 in text; were they passed
// through, the incident (and its batch) would be lost.
func TestHostileTextIsStored(t *testing.T) {
	eachDriver(t, func(t *testing.T, db testDB) {
		s := db.Open(t)
		in := incident.Incident{ID: NewID(PrefixIncident, t0), Time: t0, Tenant: "acme",
			Host: "a\x00b.example.test", Path: "/\xff\xfe/x", Snippet: "tok\x00en \xc3"}
		MustInsert(t, s, in)
		got, err := s.GetIncident(context.Background(), in.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Host != "a\uFFFDb.example.test" || got.Path != "/\uFFFD/x" || got.Snippet != "tok\uFFFDen \uFFFD" {
			t.Fatalf("stored %q %q %q", got.Host, got.Path, got.Snippet)
		}
	})
}

func TestListIncidents(t *testing.T) {
	eachDriver(t, func(t *testing.T, db testDB) {
		s := db.Open(t)
		ctx := context.Background()
		all := synth(300)
		MustInsert(t, s, all...)

		tests := []struct {
			name string
			f    IncidentFilter
			keep func(incident.Incident) bool
		}{
			{"all", IncidentFilter{}, func(incident.Incident) bool { return true }},
			{"tenant", IncidentFilter{Tenant: "globex"}, func(i incident.Incident) bool { return i.Tenant == "globex" }},
			{"run", IncidentFilter{Run: "run_3"}, func(i incident.Incident) bool { return i.Run == "run_3" }},
			{"class", IncidentFilter{Class: "agent"}, func(i incident.Incident) bool { return true }},
			{"kind", IncidentFilter{Kind: "secret"}, func(i incident.Incident) bool { return i.Kind == "secret" }},
			{"rule", IncidentFilter{Rule: "rule-2"}, func(i incident.Incident) bool { return i.Rule == "rule-2" }},
			{"action", IncidentFilter{Action: "alert"}, func(i incident.Incident) bool { return i.Action == "alert" }},
			{"host", IncidentFilter{Host: "h4.example.test"}, func(i incident.Incident) bool { return i.Host == "h4.example.test" }},
			{"triage", IncidentFilter{Triage: incident.TriageNew}, func(incident.Incident) bool { return true }},
			{"fingerprint", IncidentFilter{Fingerprint: "fp3"}, func(i incident.Incident) bool { return i.Fingerprint == "fp3" }},
			{"time range", IncidentFilter{Since: t0.Add(100 * time.Second), Until: t0.Add(150 * time.Second)},
				func(i incident.Incident) bool {
					return !i.Time.Before(t0.Add(100*time.Second)) && i.Time.Before(t0.Add(150*time.Second))
				}},
			{"tenant and kind in a range", IncidentFilter{Tenant: "acme", Kind: "deny", Since: t0.Add(30 * time.Second)},
				func(i incident.Incident) bool {
					return i.Tenant == "acme" && i.Kind == "deny" && !i.Time.Before(t0.Add(30*time.Second))
				}},
			{"nothing matches", IncidentFilter{Tenant: "nobody"}, func(incident.Incident) bool { return false }},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				var want []string
				for i := len(all) - 1; i >= 0; i-- {
					if tc.keep(all[i]) {
						want = append(want, all[i].ID)
					}
				}
				// Page through with a small page size: every match once, newest first.
				f := tc.f
				f.Limit = 17
				var got []string
				for pages := 0; ; pages++ {
					if pages > 100 {
						t.Fatal("paging does not end")
					}
					p, err := s.ListIncidents(ctx, f)
					if err != nil {
						t.Fatal(err)
					}
					for _, in := range p.Incidents {
						got = append(got, in.ID)
					}
					if p.Next == "" {
						break
					}
					f.After = p.Next
				}
				if strings.Join(got, ",") != strings.Join(want, ",") {
					t.Fatalf("got %d ids, want %d (or in another order)", len(got), len(want))
				}
			})
		}

		t.Run("paging is stable while new incidents arrive", func(t *testing.T) {
			p1, err := s.ListIncidents(ctx, IncidentFilter{Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			newer := synth(1)[0]
			newer.ID, newer.Time = NewID(PrefixIncident, t0.Add(time.Hour)), t0.Add(time.Hour)
			MustInsert(t, s, newer)
			p2, err := s.ListIncidents(ctx, IncidentFilter{Limit: 10, After: p1.Next})
			if err != nil {
				t.Fatal(err)
			}
			if p2.Incidents[0].ID != all[len(all)-11].ID {
				t.Fatalf("second page starts at %s, want %s", p2.Incidents[0].ID, all[len(all)-11].ID)
			}
		})

		t.Run("bad cursor", func(t *testing.T) {
			for _, c := range []string{"x", "12", ".inc_1", "abc.inc_1"} {
				if _, err := s.ListIncidents(ctx, IncidentFilter{After: c}); !errors.Is(err, ErrInvalid) {
					t.Errorf("cursor %q: %v", c, err)
				}
			}
		})
	})
}

// TestListUsesAnIndexForEveryFilter reads the engine's plan for each filter:
// a search on the filter's own index, and rows come out in index order (no
// temporary B-tree, no Sort). A full SCAN of incidents would make the
// dashboard crawl at a million rows.
func TestListUsesAnIndexForEveryFilter(t *testing.T) {
	eachDriver(t, func(t *testing.T, db testDB) {
		s := db.Open(t)
		ctx := context.Background()
		MustInsert(t, s, synth(600)...)
		if _, err := s.DB().Exec("ANALYZE"); err != nil {
			t.Fatal(err)
		}
		cursor := Cursor(synth(300)[299])
		tests := []struct {
			name  string
			f     IncidentFilter
			index string
		}{
			{"tenant", IncidentFilter{Tenant: "acme"}, "incidents_tenant"},
			{"run", IncidentFilter{Run: "run_1"}, "incidents_run"},
			{"class", IncidentFilter{Class: "agent"}, "incidents_class"},
			{"kind", IncidentFilter{Kind: "secret"}, "incidents_kind"},
			{"rule", IncidentFilter{Rule: "rule-1"}, "incidents_rule"},
			{"action", IncidentFilter{Action: "block"}, "incidents_action"},
			{"host", IncidentFilter{Host: "h1.example.test"}, "incidents_host"},
			{"triage", IncidentFilter{Triage: incident.TriageNew}, "incidents_triage"},
			{"fingerprint", IncidentFilter{Fingerprint: "fp1"}, "incidents_fingerprint"},
			{"time range", IncidentFilter{Since: t0, Until: t0.Add(time.Hour)}, "incidents_at"},
			{"tenant, next page", IncidentFilter{Tenant: "acme", After: cursor}, "incidents_tenant"},
			{"next page", IncidentFilter{After: cursor}, "incidents_at"},
			{"tenant in a range", IncidentFilter{Tenant: "acme", Since: t0, Until: t0.Add(time.Hour)}, "incidents_"},
		}
		if s.Driver() == Postgres {
			// 600 rows are cheaper to scan than to look up: tell the planner
			// to use an index where one serves, as it would at a million rows.
			// What is checked is that one serves: with sorting penalised, a
			// plan that must sort still shows its Sort node.
			if _, err := s.DB().Exec("ALTER DATABASE " + currentDB(t, s) +
				" SET enable_seqscan = off"); err != nil {
				t.Fatal(err)
			}
			for _, q := range []string{"enable_bitmapscan", "enable_sort"} {
				s.DB().Exec("ALTER DATABASE " + currentDB(t, s) + " SET " + q + " = off")
			}
			s.Close()
			s = db.Open(t)
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				plan, err := s.ExplainList(ctx, tc.f)
				if err != nil {
					t.Fatal(err)
				}
				p := strings.Join(plan, " | ")
				t.Log(p)
				if s.Driver() == Postgres {
					// Which index is the planner's choice by its statistics
					// (at 600 rows, "action = block" is cheaper on the time
					// index); that rows come in index order is the point.
					if !strings.Contains(p, "Index Scan Backward using incidents_") || strings.Contains(p, "Sort") {
						t.Errorf("plan %q does not read an index in order", p)
					}
					return
				}
				if !strings.Contains(p, "SEARCH incidents USING INDEX "+tc.index) {
					t.Errorf("plan %q does not search %s", p, tc.index)
				}
				if strings.Contains(p, "TEMP B-TREE") {
					t.Errorf("plan %q sorts in a temporary B-tree", p)
				}
			})
		}
		t.Run("no filter reads the time index in order", func(t *testing.T) {
			plan, _ := s.ExplainList(ctx, IncidentFilter{})
			p := strings.Join(plan, " | ")
			want := "SCAN incidents USING INDEX incidents_at"
			if s.Driver() == Postgres {
				want = "Index Scan Backward using incidents_at on incidents"
			}
			if !strings.Contains(p, want) || strings.Contains(p, "Sort") {
				t.Errorf("plan %q, want %q", p, want)
			}
		})
	})
}

// currentDB is the name of the PostgreSQL database s is connected to.
func currentDB(t *testing.T, s *Store) string {
	t.Helper()
	var name string
	if err := s.DB().QueryRow("SELECT current_database()").Scan(&name); err != nil {
		t.Fatal(err)
	}
	return name
}

func TestTriage(t *testing.T) {
	eachDriver(t, func(t *testing.T, db testDB) {
		s := db.Open(t)
		ctx := context.Background()
		in := synth(1)[0]
		MustInsert(t, s, in)
		got, err := s.TriageIncident(ctx, in.ID, TriageUpdate{State: incident.TriageFalsePositive, Note: "test fixture", Actor: "alice"})
		if err != nil {
			t.Fatal(err)
		}
		if got.Triage.State != incident.TriageFalsePositive || got.Triage.Note != "test fixture" || got.Triage.Actor != "alice" || got.Triage.Time.IsZero() {
			t.Fatalf("after triage: %+v", got)
		}
		if _, err := s.TriageIncident(ctx, in.ID, TriageUpdate{State: incident.TriageResolved, Actor: "bob"}); err != nil {
			t.Fatal(err)
		}
		h, err := s.TriageHistory(ctx, in.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(h) != 2 || h[0].From != incident.TriageNew || h[0].To != incident.TriageFalsePositive || h[1].Actor != "bob" || h[1].To != incident.TriageResolved {
			t.Fatalf("history %+v", h)
		}
		audit, _ := s.ListAudit(ctx, AuditFilter{Tenant: in.Tenant})
		if len(audit) != 2 || audit[0].Action != "incident.triage" || audit[0].Target != in.ID {
			t.Fatalf("audit %+v", audit)
		}
		for name, u := range map[string]TriageUpdate{
			"unknown state": {State: "ignored", Actor: "alice"},
			"no actor":      {State: incident.TriageResolved},
		} {
			if _, err := s.TriageIncident(ctx, in.ID, u); !errors.Is(err, ErrInvalid) {
				t.Errorf("%s: %v", name, err)
			}
		}
		if _, err := s.TriageIncident(ctx, "inc_nope", TriageUpdate{State: incident.TriageResolved, Actor: "a"}); !errors.Is(err, ErrNotFound) {
			t.Errorf("unknown incident: %v", err)
		}
	})
}

func TestStats(t *testing.T) {
	eachDriver(t, func(t *testing.T, db testDB) {
		s := db.Open(t)
		ctx := context.Background()
		all := synth(90) // 90 seconds from t0
		MustInsert(t, s, all...)
		s.TriageIncident(ctx, all[1].ID, TriageUpdate{State: incident.TriageFalsePositive, Actor: "a"}) // rule-1, secret, alert? i=1: alert no (odd)

		t.Run("count over time", func(t *testing.T) {
			cs, err := s.CountOverTime(ctx, IncidentFilter{Tenant: "acme"}, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			var total int64
			for _, c := range cs {
				if c.Tenant != "acme" || c.Start.Second() != 0 {
					t.Errorf("bucket %+v", c)
				}
				total += c.Count
			}
			// acme is every third incident, all of kind deny (i%3==0).
			if total != 30 || len(cs) != 2 || cs[0].Kind != "deny" || cs[0].Count != 20 {
				t.Fatalf("counts %+v", cs)
			}
		})
		t.Run("top rules and hosts", func(t *testing.T) {
			rules, err := s.TopRules(ctx, IncidentFilter{}, 2)
			if err != nil || len(rules) != 2 || rules[0].Count < rules[1].Count {
				t.Fatalf("top rules %+v %v", rules, err)
			}
			hosts, err := s.TopHosts(ctx, IncidentFilter{Kind: "deny"}, 3)
			if err != nil || len(hosts) != 3 || !strings.HasSuffix(hosts[0].Key, ".example.test") {
				t.Fatalf("top hosts %+v %v", hosts, err)
			}
		})
		t.Run("rule stats", func(t *testing.T) {
			st, err := s.RuleStats(ctx, IncidentFilter{})
			if err != nil {
				t.Fatal(err)
			}
			var hits, blocks, fps int64
			for _, r := range st {
				hits, blocks, fps = hits+r.Hits, blocks+r.Blocks, fps+r.FalsePositives
			}
			// 60 findings (kinds secret and exfil-link), half of them blocked; one false positive.
			if hits != 60 || blocks != 30 || fps != 1 {
				t.Fatalf("rule stats %+v", st)
			}
		})
		t.Run("same fingerprint, one tenant only", func(t *testing.T) {
			got, err := s.SameFingerprint(ctx, "globex", "fp3", 100)
			if err != nil {
				t.Fatal(err)
			}
			want := 0
			for _, in := range all {
				if in.Tenant == "globex" && in.Fingerprint == "fp3" {
					want++
				}
			}
			if len(got) != want || want == 0 {
				t.Fatalf("%d incidents, want %d", len(got), want)
			}
			for _, in := range got {
				if in.Tenant != "globex" {
					t.Fatalf("another tenant's incident: %+v", in)
				}
			}
			if _, err := s.SameFingerprint(ctx, "", "fp3", 10); !errors.Is(err, ErrInvalid) {
				t.Fatalf("no tenant: %v", err)
			}
		})
	})
}

func TestPrune(t *testing.T) {
	eachDriver(t, func(t *testing.T, db testDB) {
		s := db.Open(t)
		ctx := context.Background()
		defer func(n int64) { pruneChunk = n }(pruneChunk)
		pruneChunk = 70
		all := synth(1200) // many delete chunks
		MustInsert(t, s, all...)
		s.TriageIncident(ctx, all[0].ID, TriageUpdate{State: incident.TriageResolved, Actor: "a"})
		cut := all[1100].Time
		r := &Retention{Store: s, MaxAge: time.Hour, Now: func() time.Time { return cut.Add(time.Hour) }}
		n, err := r.Once(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var left, hist int
		s.DB().QueryRow("SELECT COUNT(*) FROM incidents").Scan(&left)
		s.DB().QueryRow("SELECT COUNT(*) FROM triage_history").Scan(&hist)
		if n != 1100 || left != 100 || hist != 0 {
			t.Fatalf("pruned %d, left %d incidents and %d history rows", n, left, hist)
		}
		if _, err := s.GetIncident(ctx, all[1100].ID); err != nil {
			t.Fatalf("the oldest incident within retention is gone: %v", err)
		}
		// The audit log keeps its entry: it is not pruned with the incidents.
		if a, _ := s.ListAudit(ctx, AuditFilter{}); len(a) != 1 {
			t.Fatalf("audit %+v", a)
		}
	})
}

func TestNewID(t *testing.T) {
	seen := map[string]bool{}
	prev := ""
	for i := range 1000 {
		id := NewID(PrefixIncident, t0.Add(time.Duration(i)*time.Millisecond))
		if len(id) != len(PrefixIncident)+26 || !strings.HasPrefix(id, PrefixIncident) || seen[id] {
			t.Fatalf("bad or repeated id %q", id)
		}
		for _, c := range id[len(PrefixIncident):] {
			if !strings.ContainsRune(crockford, c) {
				t.Fatalf("id %q has %q", id, c)
			}
		}
		if id[:14] < prev[:min(14, len(prev))] {
			t.Fatalf("id %q sorts before the earlier %q", id, prev)
		}
		seen[id], prev = true, id
	}
	a, b := NewID("", t0), NewID("", t0)
	if a[:10] != b[:10] || a == b {
		t.Fatalf("same millisecond: %q %q", a, b)
	}
}

func FuzzParseCursor(f *testing.F) {
	f.Add("1700000000000000000.inc_01H")
	f.Add("")
	f.Add("-1.x")
	f.Fuzz(func(t *testing.T, c string) {
		at, id, err := parseCursor(c)
		if err != nil {
			return
		}
		if id == "" || !strings.HasSuffix(c, "."+id) {
			t.Fatalf("cursor %q parsed as %d %q", c, at, id)
		}
		if fmt.Sprintf("%d.%s", at, id) != c && !strings.HasPrefix(c, "+") && !strings.HasPrefix(c, "0") && !strings.HasPrefix(c, "-0") {
			t.Fatalf("cursor %q does not round-trip", c)
		}
	})
}
