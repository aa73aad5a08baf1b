package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sluice-egress/sluice/incident"
)

// BenchmarkTriageQueries measures the triage pages' queries on 100,000
// incidents, on both engines (the dashboard's benchmark measures whole
// pages on SQLite): go test -run '^$' -bench TriageQueries ./store/
func BenchmarkTriageQueries(b *testing.B) {
	eachDriverB(b, func(b *testing.B, db testDB) {
		s, ctx := db.Open(b), context.Background()
		now := time.Now().UTC()
		batch := make([]incident.Incident, 0, 5000)
		for i := range 100_000 {
			in := incident.Incident{ID: fmt.Sprintf("inc_b%06d", i), Time: now.Add(-time.Duration(i) * 26 * time.Second),
				Tenant: []string{"acme", "globex"}[i%2], Run: fmt.Sprintf("run_%03d", i%100), Host: fmt.Sprintf("host-%02d.example.test", i%50),
				Path: fmt.Sprintf("/api/items/%d", i%700), Kind: "secret", Reason: "secret-detected", Action: "block",
				Rule: fmt.Sprintf("rule-%d", i%10), Fingerprint: fmt.Sprintf("fp-%03d", i%300)}
			batch = append(batch, in)
			if len(batch) == cap(batch) {
				if err := s.InsertIncidents(ctx, batch); err != nil {
					b.Fatal(err)
				}
				batch = batch[:0]
			}
		}
		if db.Driver == Postgres {
			s.DB().ExecContext(ctx, "ANALYZE incidents")
		}
		for _, q := range []struct {
			name string
			run  func() error
		}{
			{"search-none", func() error { _, err := s.ListIncidents(ctx, IncidentFilter{Search: "no-such-thing"}); return err }},
			{"search-rare", func() error { _, err := s.ListIncidents(ctx, IncidentFilter{Search: "items/699"}); return err }},
			{"sort-host", func() error { _, err := s.ListIncidents(ctx, IncidentFilter{Sort: "host", Asc: true}); return err }},
			{"group-fingerprint", func() error { _, err := s.GroupIncidents(ctx, IncidentFilter{}, "fingerprint", 200); return err }},
			{"group-rule-search", func() error {
				_, err := s.GroupIncidents(ctx, IncidentFilter{Search: "host-1"}, "rule", 200)
				return err
			}},
			{"choices-tenant", func() error { _, err := s.AllChoices(ctx, IncidentFilter{Tenant: "acme"}, 100); return err }},
			{"count-new", func() error { _, err := s.CountIncidents(ctx, IncidentFilter{Triage: incident.TriageNew}); return err }},
		} {
			b.Run(q.name, func(b *testing.B) {
				for b.Loop() {
					if err := q.run(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	})
}
