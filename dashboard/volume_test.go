package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/sluice-egress/sluice/incident"
	"github.com/sluice-egress/sluice/store"
)

// volumeIncidents is the size of the store the triage pages are measured on.
const volumeIncidents = 100_000

// seedVolume fills w's store with n incidents of two tenants over 30 days:
// 50 hosts, 10 rules, 300 fingerprints, 100 runs, denials and findings;
// inc_v000000 is the newest. It creates the runs too.
func seedVolume(tb testing.TB, w *pageWorld, n int) {
	tb.Helper()
	ctx := context.Background()
	now := time.Now().UTC()
	reasons := []string{"host-not-allowed", "address-refused", "method-not-allowed"}
	batch := make([]incident.Incident, 0, 5000)
	for i := range n {
		tenant := "acme"
		if i%5 == 4 {
			tenant = "globex"
		}
		in := incident.Incident{ID: fmt.Sprintf("inc_v%06d", i), Time: now.Add(-time.Duration(i) * 26 * time.Second),
			Tenant: tenant, Class: "agent", Run: fmt.Sprintf("run_v%03d", i%100), Host: fmt.Sprintf("host-%02d.example.test", i%50),
			Port: 443, Method: "POST", Path: fmt.Sprintf("/api/v1/items/%d", i%700), Action: "block"}
		if i%3 == 0 {
			in.Kind, in.Reason = "deny", reasons[i%len(reasons)]
		} else {
			in.Kind, in.Reason, in.Rule = "secret", "secret-detected", fmt.Sprintf("rule-%d", i%10)
			in.Fingerprint, in.Snippet, in.Where = fmt.Sprintf("fp-%03d", i%300), "token=ghp_****", "body"
		}
		if i%7 == 0 {
			in.Triage = incident.Triage{State: incident.TriageResolved, Note: "looked at it", Actor: "rex", Time: in.Time}
		}
		batch = append(batch, in)
		if len(batch) == cap(batch) || i == n-1 {
			if err := w.store.InsertIncidents(ctx, batch); err != nil {
				tb.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	for i := range 100 {
		tenant := "acme"
		if i%5 == 4 {
			tenant = "globex"
		}
		if _, err := w.store.CreateRun(ctx, store.Run{ID: fmt.Sprintf("run_v%03d", i), Tenant: tenant, Class: "agent",
			TokenHash: fmt.Sprintf("hash-%03d", i), Expires: now.Add(time.Hour)}); err != nil {
			tb.Fatal(err)
		}
	}
}

// volumePages are the triage loop's pages, measured at volumeIncidents.
var volumePages = []struct{ name, path string }{
	{"list", "/incidents"},
	{"list-filtered", "/incidents?tenant=acme&kind=secret&rule=rule-3"},
	{"search-common", "/incidents?q=host-07"},
	{"search-rare", "/incidents?q=items/699"},
	{"search-none", "/incidents?q=no-such-thing"},
	{"sort-host", "/incidents?sort=host&dir=asc"},
	{"sort-host-page-50", "/incidents?sort=host&dir=asc&offset=2500"},
	{"group-fingerprint", "/incidents?group=fingerprint"},
	{"group-rule-search", "/incidents?group=rule&q=host-1"},
	{"group-host", "/incidents?group=host&triage=new"},
	{"overview", "/"},
	{"runs", "/runs"},
	{"run", "/runs/run_v042"},
	{"timeline-host", "/timeline?host=host-07.example.test"},
	{"timeline-run", "/timeline?run=run_v042&range=30d"},
	{"incident", "/incidents/inc_v000001"},
}

// BenchmarkTriagePages measures each triage page, over HTTP with a
// session, on a store of volumeIncidents incidents (SQLite). The budget
// is 300 ms a page: go test -run '^$' -bench TriagePages ./dashboard/
func BenchmarkTriagePages(b *testing.B) {
	b.Setenv("DASH_TEST_ACME_TOKEN", "acme-token-0123456789")
	b.Setenv("DASH_TEST_GLOBEX_TOKEN", "globex-token-0123456789")
	w := mustPageWorld(b)
	seedVolume(b, w, volumeIncidents)
	c := w.client()
	c.mustLogin("rex")
	// What a listing costs when its filter choices are not cached (once
	// per tenant every choiceTTL).
	b.Run("choices-uncached", func(b *testing.B) {
		for b.Loop() {
			if _, err := w.store.AllChoices(context.Background(), store.IncidentFilter{Tenant: "acme"}, maxChoices); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, p := range volumePages {
		b.Run(p.name, func(b *testing.B) {
			for b.Loop() {
				if r := c.get(p.path); r.code != http.StatusOK {
					b.Fatalf("%s: %d %s", p.path, r.code, r.body)
				}
			}
		})
	}
}
