package sandboxdns

import (
	"net/netip"
	"testing"
)

func TestClaim(t *testing.T) {
	var tb Table
	acme := Identity{Tenant: "acme", Class: "agent"}
	tb.SetStatic(map[netip.Prefix]Identity{netip.MustParsePrefix("10.1.0.0/16"): acme,
		netip.MustParsePrefix("10.2.0.0/16"): {Tenant: "globex", Class: "agent"}})
	run1 := Identity{Tenant: "acme", Class: "agent", Run: "run_1"}
	run2 := Identity{Tenant: "globex", Class: "agent", Run: "run_2"}
	mustClaim := func(p string, id Identity) {
		t.Helper()
		if err := tb.Claim(netip.MustParsePrefix(p), id); err != nil {
			t.Fatal(err)
		}
	}
	mustClaim("10.1.0.7/32", run1)
	mustClaim("10.1.0.7/32", run1) // again, as a restore does
	mustClaim("10.9.0.1/32", run2)
	for _, bad := range []struct {
		p  string
		id Identity
	}{
		{"10.1.0.7/32", run2},         // another run's address
		{"10.1.0.8/32", run2},         // inside another tenant's network
		{"10.0.0.0/8", run1},          // a network over other sandboxes
		{"0.0.0.0/0", run1},           // everything
		{"::ffff:10.9.0.1/128", run1}, // a mapped spelling of run_2's
	} {
		if err := tb.Claim(netip.MustParsePrefix(bad.p), bad.id); err == nil {
			t.Errorf("claim %s by %v succeeded", bad.p, bad.id)
		}
	}
	if id, _ := tb.Lookup(netip.MustParseAddr("10.1.0.7")); id != run1 {
		t.Fatalf("10.1.0.7 is %v", id)
	}
	if id, _ := tb.Lookup(netip.MustParseAddr("10.1.0.9")); id != acme {
		t.Fatalf("10.1.0.9 is %v", id)
	}
	// A reload keeps the runs' claims and drops networks no longer configured.
	tb.SetStatic(map[netip.Prefix]Identity{netip.MustParsePrefix("10.3.0.0/16"): acme})
	if _, ok := tb.Lookup(netip.MustParseAddr("10.1.0.9")); ok {
		t.Fatal("a network gone from the config still maps")
	}
	if id, _ := tb.Lookup(netip.MustParseAddr("10.1.0.7")); id != run1 {
		t.Fatalf("the run's claim went with the reload: %v", id)
	}
	tb.DeleteRun("run_1")
	if _, ok := tb.Lookup(netip.MustParseAddr("10.1.0.7")); ok {
		t.Fatal("an ended run's address still maps")
	}
}
