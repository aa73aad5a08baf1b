package sandboxdns

import (
	"fmt"
	"net/netip"
	"slices"
)

// Claim maps p to id as Set does, unless that would take addresses from another
// sandbox: p may not overlap a prefix mapped to another identity, except a static
// network of id's own tenant (a run's address inside its tenant's network, which the
// longer prefix then gives to the run). A claim repeated by the same identity is no
// error.
func (t *Table) Claim(p netip.Prefix, id Identity) error {
	p = normPrefix(p)
	if !p.IsValid() {
		return fmt.Errorf("sandboxdns: claim: invalid prefix")
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, e := range t.entries {
		if !e.prefix.Overlaps(p) || e.id == id {
			continue
		}
		if e.id.Run == "" && e.id.Tenant == id.Tenant && e.prefix.Bits() < p.Bits() {
			continue
		}
		owner := "tenant " + e.id.Tenant
		if e.id.Run != "" {
			owner = "run " + e.id.Run
		}
		return fmt.Errorf("sandboxdns: %s overlaps %s of %s", p, e.prefix, owner)
	}
	t.entries = slices.DeleteFunc(t.entries, func(e tableEntry) bool { return e.prefix == p })
	i, _ := slices.BinarySearchFunc(t.entries, p, func(e tableEntry, p netip.Prefix) int { return p.Bits() - e.prefix.Bits() })
	t.entries = slices.Insert(t.entries, i, tableEntry{p, id})
	return nil
}

// DeleteRun removes every prefix a run claimed.
func (t *Table) DeleteRun(run string) {
	if run == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.entries = slices.DeleteFunc(t.entries, func(e tableEntry) bool { return e.id.Run == run })
}

// SetStatic replaces every mapping that belongs to no run (the configured networks)
// with m, keeping the runs' claims: a config reload.
func (t *Table) SetStatic(m map[netip.Prefix]Identity) {
	t.mu.Lock()
	t.entries = slices.DeleteFunc(t.entries, func(e tableEntry) bool { return e.id.Run == "" })
	t.mu.Unlock()
	for p, id := range m {
		id.Run = ""
		t.Set(p, id)
	}
}
