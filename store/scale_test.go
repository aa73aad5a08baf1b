package store

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/sluice-egress/sluice/incident"
)

// TestListAtScale fills the table with SLUICE_STORE_SCALE rows (a million,
// say) and times a page of every filter. Off by default: it takes about a
// minute. `SLUICE_STORE_SCALE=1000000 go test -run AtScale -v ./store`
func TestListAtScale(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("SLUICE_STORE_SCALE"))
	if n <= 0 {
		t.Skip("set SLUICE_STORE_SCALE=1000000 to run")
	}
	s := MustOpen(t)
	ctx := context.Background()
	start := time.Now()
	const batch = 5000
	for i := 0; i < n; i += batch {
		ins := synth(min(batch, n-i))
		for j := range ins {
			ins[j].Time = t0.Add(time.Duration(i+j) * time.Second)
			ins[j].ID = NewID(PrefixIncident, ins[j].Time)
		}
		MustInsert(t, s, ins...)
	}
	el := time.Since(start)
	t.Logf("inserted %d rows in %v: %.0f rows/s", n, el.Round(time.Millisecond), float64(n)/el.Seconds())
	mid := t0.Add(time.Duration(n/2) * time.Second)
	for name, f := range map[string]IncidentFilter{
		"none": {}, "tenant": {Tenant: "acme"}, "run": {Run: "run_3"}, "kind": {Kind: "secret"},
		"rule": {Rule: "rule-2"}, "action": {Action: "alert"}, "host": {Host: "h4.example.test"},
		"triage": {Triage: incident.TriageNew}, "fingerprint": {Fingerprint: "fp1"},
		"range": {Since: mid, Until: mid.Add(time.Hour)}, "tenant+range": {Tenant: "globex", Since: mid, Until: mid.Add(time.Hour)},
		"tenant+kind": {Tenant: "acme", Kind: "deny"}, "deep page": {Tenant: "acme", After: Cursor(incident.Incident{ID: "inc_Z", Time: mid})},
	} {
		f.Limit = 50
		start := time.Now()
		p, err := s.ListIncidents(ctx, f)
		d := time.Since(start)
		if err != nil || len(p.Incidents) == 0 {
			t.Fatalf("%s: %d incidents, %v", name, len(p.Incidents), err)
		}
		t.Logf("%-12s page of %d in %v", name, len(p.Incidents), d.Round(time.Microsecond))
		if d > 50*time.Millisecond {
			t.Errorf("%s: a page took %v", name, d)
		}
	}
}
