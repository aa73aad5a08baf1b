package rules

import (
	"errors"
	"testing"
)

// A swap installs the new engine at once and keeps the grants (and runs) of the old.
func TestHolderSwap(t *testing.T) {
	f := MustFixture(t, decideConfig, "acme", "globex")
	if err := f.engine.SetGrants([]Grant{{ID: "req_h", Tenant: "acme", Entry: Entry{Host: "kept.example.test"}}}); err != nil {
		t.Fatal(err)
	}
	h := NewHolder(f.engine)
	if id, err := h.Identify("acme", f.tokens["acme"]); err != nil || id.Tenant != "acme" {
		t.Fatalf("Identify = %+v, %v", id, err)
	}
	if h.Engine() != f.engine {
		t.Fatal("Engine is not the engine held")
	}
	next, err := Compile(f.pol, f.token)
	if err != nil {
		t.Fatal(err)
	}
	h.Swap(next)
	if h.Engine() != next {
		t.Fatal("Swap did not install the new engine")
	}
	q := Query{Identity: acmeAgent, Host: "kept.example.test", Port: 443, Stage: StageConnect}
	if d := h.Decide(q); d.Action != Inspect {
		t.Fatalf("after Swap: %v, want the grant carried over", d.Action)
	}
	q.Host = "nowhere.example.test"
	if d := h.Decide(q); d.Action != Deny {
		t.Fatalf("after Swap: %v for an unlisted host, want deny", d.Action)
	}
	var none *Holder
	if none.Engine() != nil {
		t.Fatal("a nil Holder has an engine")
	}
	if _, err := none.Identify("acme", f.tokens["acme"]); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("a nil Holder identifies: %v", err)
	}
}
