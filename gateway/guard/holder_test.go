package guard

import (
	"net/netip"
	"testing"
)

// SetUpstream replaces hosts and the added ranges and keeps the rest; the
// Dialer handed out before is not changed.
func TestHolderSetUpstream(t *testing.T) {
	first := &Dialer{Deny: DefaultDeny(), Hosts: map[string]netip.Addr{"a.example.test": netip.MustParseAddr("192.0.2.1")}}
	h := NewHolder(first)
	deny := []netip.Prefix{netip.MustParsePrefix("198.51.100.0/24")}
	h.SetUpstream(nil, deny)
	got := h.Load()
	if got == first || got.Hosts != nil || len(got.ExtraDeny) != 1 || len(got.Deny) != len(first.Deny) {
		t.Fatalf("after SetUpstream: %+v", got)
	}
	if len(first.Hosts) != 1 || first.ExtraDeny != nil {
		t.Fatalf("the Dialer in use was changed: %+v", first)
	}
	var none *Holder
	if none.Load() != nil {
		t.Fatal("a nil Holder has a Dialer")
	}
}
