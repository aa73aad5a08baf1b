package gateway

import (
	"context"
	"sync"
)

// scanBudget bounds the bytes held for scanning across all requests and
// WebSockets, and keeps any one tenant from taking all of it. A tenant that
// holds nothing may take what is free; one that already holds may grow only
// up to an equal share of the pool among the tenants holding or waiting,
// plus one share kept for a tenant yet to come. Waiters are served whenever
// their bytes fit, not in arrival order, so that one large reservation
// cannot hold up every small one behind it.
type scanBudget struct {
	total int64

	mu      sync.Mutex
	used    int64
	held    map[string]int64 // by tenant
	active  map[string]int   // tenants holding or waiting: holds + waiters
	waiters []*budgetWaiter
}

type budgetWaiter struct {
	tenant string
	n      int64
	ready  chan struct{} // closed when granted
}

func newScanBudget(total int64) *scanBudget {
	return &scanBudget{total: total, held: map[string]int64{}, active: map[string]int{}}
}

// share is the most a tenant that already holds may hold.
func (b *scanBudget) share() int64 {
	return b.total / int64(len(b.active)+1)
}

func (b *scanBudget) fits(tenant string, n int64) bool {
	if b.used+n > b.total {
		return false
	}
	h := b.held[tenant]
	return h == 0 || h+n <= b.share()
}

func (b *scanBudget) grantLocked(tenant string, n int64) {
	b.used += n
	b.held[tenant] += n
	b.active[tenant]++
}

// acquire takes n bytes for tenant, waiting until ctx ends. n is cut to the
// whole pool, so that a request larger than the pool can still run alone.
// It returns the bytes taken (to give back with release) and whether it got
// them.
func (b *scanBudget) acquire(ctx context.Context, tenant string, n int64) (int64, bool) {
	if n <= 0 {
		return 0, true
	}
	n = min(n, b.total)
	b.mu.Lock()
	if b.fits(tenant, n) {
		b.grantLocked(tenant, n)
		b.mu.Unlock()
		return n, true
	}
	w := &budgetWaiter{tenant: tenant, n: n, ready: make(chan struct{})}
	b.waiters = append(b.waiters, w)
	b.active[tenant]++
	b.mu.Unlock()
	select {
	case <-w.ready:
		return n, true
	case <-ctx.Done():
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-w.ready: // granted while giving up: keep it
		return n, true
	default:
	}
	for i, o := range b.waiters {
		if o == w {
			b.waiters = append(b.waiters[:i], b.waiters[i+1:]...)
			break
		}
	}
	b.dropActiveLocked(tenant)
	return 0, false
}

func (b *scanBudget) dropActiveLocked(tenant string) {
	if b.active[tenant]--; b.active[tenant] <= 0 {
		delete(b.active, tenant)
	}
}

// release gives back n bytes that tenant took with one acquire.
func (b *scanBudget) release(tenant string, n int64) {
	if n <= 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
	if b.held[tenant] -= n; b.held[tenant] <= 0 {
		delete(b.held, tenant)
	}
	b.dropActiveLocked(tenant)
	// Serve every waiter that fits now. A waiter stays active while it
	// waits, so its grant only moves it from waiting to holding.
	kept := b.waiters[:0]
	for _, w := range b.waiters {
		if b.fits(w.tenant, w.n) {
			b.used += w.n
			b.held[w.tenant] += w.n
			close(w.ready)
			continue
		}
		kept = append(kept, w)
	}
	clear(b.waiters[len(kept):])
	b.waiters = kept
}

// inUse reports the bytes held, for tests and metrics.
func (b *scanBudget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// scanHold is what one request or WebSocket holds of the budget: it grows
// as bytes arrive and is given back whole. A nil budget holds nothing.
type scanHold struct {
	b      *scanBudget
	tenant string
	mu     sync.Mutex // a WebSocket's copy goroutine and its handler may both release
	parts  []int64    // each acquire, to release one by one
	closed bool       // no more grows: its owner is gone
}

// grow takes n more bytes, waiting until ctx ends.
func (h *scanHold) grow(ctx context.Context, n int64) bool {
	if h == nil || h.b == nil || n <= 0 {
		return true
	}
	got, ok := h.b.acquire(ctx, h.tenant, n)
	if !ok {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		h.b.release(h.tenant, got)
		return false
	}
	h.parts = append(h.parts, got)
	return true
}

// close releases everything and refuses any later grow, so that a goroutine
// still running after its owner ended cannot take bytes nobody gives back.
func (h *scanHold) close() {
	if h == nil || h.b == nil {
		return
	}
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	h.release()
}

// release gives back everything held.
func (h *scanHold) release() {
	if h == nil || h.b == nil {
		return
	}
	h.mu.Lock()
	parts := h.parts
	h.parts = nil
	h.mu.Unlock()
	for _, n := range parts {
		h.b.release(h.tenant, n)
	}
}
