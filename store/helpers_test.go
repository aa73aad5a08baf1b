package store

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluice-egress/sluice/incident"
)

// MustOpen opens a fresh store in a temporary directory.
func MustOpen(tb testing.TB) *Store {
	tb.Helper()
	s, err := Open(context.Background(), filepath.Join(tb.TempDir(), FileName))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// MustInsert stores incidents or fails the test.
func MustInsert(tb testing.TB, s *Store, ins ...incident.Incident) {
	tb.Helper()
	if err := s.InsertIncidents(context.Background(), ins); err != nil {
		tb.Fatal(err)
	}
}

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// synth returns n incidents spread over tenants, kinds, rules and hosts, one
// second apart starting at t0.
func synth(n int) []incident.Incident {
	tenants := []string{"acme", "globex", "initech"}
	kinds := []string{"deny", "secret", "exfil-link"}
	out := make([]incident.Incident, n)
	for i := range out {
		at := t0.Add(time.Duration(i) * time.Second)
		in := incident.Incident{
			ID: NewID(PrefixIncident, at), Time: at,
			Tenant: tenants[i%3], Class: "agent", Run: fmt.Sprintf("run_%d", i%7),
			Kind: kinds[i%3], Reason: "host-not-allowed", Action: "block",
			Host: fmt.Sprintf("h%d.example.test", i%11), Port: 443, Method: "GET", Path: "/x",
		}
		if in.Kind != "deny" {
			in.Rule = fmt.Sprintf("rule-%d", i%5)
			in.Reason = "secret-detected"
			in.Fingerprint = fmt.Sprintf("fp%d", i%13)
			if i%2 == 0 {
				in.Action = "alert"
			}
		}
		out[i] = in
	}
	return out
}
