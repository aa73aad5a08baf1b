package sandboxdns

import (
	"net/netip"
	"slices"
	"sync"
)

// Identity is who a query comes from: the tenant, its launch class and, for a run's sandbox,
// the run.
type Identity struct {
	Tenant, Class, Run string
}

// Sources tells whose sandbox a source address belongs to. Runs register their sandbox's
// address or network with it; a lookup that fails refuses the query.
type Sources interface {
	// Lookup returns the identity of the sandbox that addr (unmapped: IPv4 as IPv4)
	// belongs to, false if none.
	Lookup(addr netip.Addr) (Identity, bool)
}

// Table is a Sources that runs register with: prefixes (a sandbox's /32 or /128, or a whole
// network for a static tenant) mapped to identities, the longest matching prefix winning.
// Its zero value is empty and ready; it is safe for concurrent use.
type Table struct {
	mu      sync.RWMutex
	entries []tableEntry // longest prefix first
}

type tableEntry struct {
	prefix netip.Prefix
	id     Identity
}

// Set maps p (masked; an IPv4-mapped prefix as its IPv4 one) to id, replacing what p mapped
// to before. An invalid prefix is ignored.
func (t *Table) Set(p netip.Prefix, id Identity) {
	p = normPrefix(p)
	if !p.IsValid() {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.entries = slices.DeleteFunc(t.entries, func(e tableEntry) bool { return e.prefix == p })
	i, _ := slices.BinarySearchFunc(t.entries, p, func(e tableEntry, p netip.Prefix) int { return p.Bits() - e.prefix.Bits() })
	t.entries = slices.Insert(t.entries, i, tableEntry{p, id})
}

// normPrefix masks p and turns an IPv4-mapped prefix into the IPv4 prefix it maps, since
// Lookup unmaps the addresses it is given.
func normPrefix(p netip.Prefix) netip.Prefix {
	if p.Addr().Is4In6() && p.Bits() >= 96 {
		p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
	}
	return p.Masked()
}

// Delete removes p's mapping, if any.
func (t *Table) Delete(p netip.Prefix) {
	p = normPrefix(p)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.entries = slices.DeleteFunc(t.entries, func(e tableEntry) bool { return e.prefix == p })
}

// DeleteIdentity removes every prefix mapped to id: a run that ended.
func (t *Table) DeleteIdentity(id Identity) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.entries = slices.DeleteFunc(t.entries, func(e tableEntry) bool { return e.id == id })
}

// Lookup implements Sources.
func (t *Table) Lookup(addr netip.Addr) (Identity, bool) {
	addr = addr.Unmap().WithZone("")
	t.mu.RLock()
	defer t.mu.RUnlock()
	for _, e := range t.entries {
		if e.prefix.Contains(addr) {
			return e.id, true
		}
	}
	return Identity{}, false
}

// SourcesFunc adapts a function to Sources.
type SourcesFunc func(addr netip.Addr) (Identity, bool)

// Lookup calls f.
func (f SourcesFunc) Lookup(addr netip.Addr) (Identity, bool) { return f(addr) }
