package runs

import (
	"context"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"github.com/sluice-egress/sluice/rules"
)

// Replicas share one store: a run created, ended or expired on one replica
// reaches the others through the store's change notifications (SyncRun),
// a periodic and on-reconnect Resync, and, for a token used before its
// notification arrived, LookupToken.

// SyncRun brings one run in line with the store, after another replica
// changed it: a live run this replica lacks is registered; one that ended or
// expired is removed and its tunnels here are closed.
func (m *Service) SyncRun(ctx context.Context, id string) error {
	run, err := m.Store.GetRun(ctx, id)
	if err != nil {
		return fmt.Errorf("runs: sync %s: %w", id, err)
	}
	m.apply(run, time.Now())
	return nil
}

// live reports whether a stored run may still be used at now.
func live(run Run, now time.Time) bool {
	return run.Ended.IsZero() && (run.Expires.IsZero() || now.Before(run.Expires))
}

func (m *Service) tracked(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.expires[id]
	return ok
}

// apply registers or removes run here as the store has it.
func (m *Service) apply(run Run, now time.Time) {
	switch known := m.tracked(run.ID); {
	case live(run, now) && !known:
		if err := m.register(run); err != nil {
			m.logger().Warn("run from a peer not registered", "run", run.ID, "tenant", run.Tenant, "err", err)
			return
		}
		m.logger().Debug("run registered from a peer", "run", run.ID)
	case !live(run, now) && known:
		m.forget(run)
	}
}

// forget removes a run that ended elsewhere: no store write, no audit entry
// (the replica that ended it wrote them), but its tunnels here close.
func (m *Service) forget(run Run) {
	if e := m.engine(); e != nil {
		e.RemoveRun(run.ID)
	}
	closed := 0
	if gw := m.gateway(); gw != nil {
		closed = gw.CloseRun(run.ID)
	}
	m.mu.Lock()
	delete(m.expires, run.ID)
	m.mu.Unlock()
	if m.ForgetPhantoms != nil {
		if err := m.ForgetPhantoms(run.Tenant, run.ID); err != nil {
			m.logger().Warn("run phantoms not forgotten", "run", run.ID, "err", err)
		}
	}
	m.logger().Info("run ended by a peer", "run", run.ID, "tenant", run.Tenant, "tunnels_closed", closed)
}

// Resync brings every run in line with the store: the active runs this
// replica lacks are registered, and those it has that ended or expired
// elsewhere are removed. Call it when change notifications may have been
// missed, and periodically.
func (m *Service) Resync(ctx context.Context) error {
	// What is tracked is read before the store is: a run created here
	// meanwhile is stored before it is tracked, so it cannot be mistaken
	// for one the store lacks.
	m.mu.Lock()
	before := make([]string, 0, len(m.expires))
	for id := range m.expires {
		before = append(before, id)
	}
	m.mu.Unlock()
	active, err := m.Store.ActiveRuns(ctx)
	if err != nil {
		return fmt.Errorf("runs: resync: %w", err)
	}
	now := time.Now()
	seen := make(map[string]bool, len(active))
	for _, run := range active {
		seen[run.ID] = true
		m.apply(run, now)
	}
	// A run missing from the listing is checked one by one: the listing is
	// bounded, and a run beyond it is not ended.
	for _, id := range before {
		if seen[id] {
			continue
		}
		run, err := m.Store.GetRun(ctx, id)
		if err != nil {
			m.logger().Warn("run not resynced", "run", id, "err", err)
			continue
		}
		m.apply(run, now)
	}
	return nil
}

// lookups bounds the store reads that unknown tokens cause: at most a few
// at once, and a token found in no run is not looked up again for a while.
type lookups struct {
	once    sync.Once
	slots   chan struct{}
	mu      sync.Mutex
	missing map[[32]byte]time.Time
}

// missTTL is how long a token found in no run is not looked up again. A new
// run's token is random: it cannot have been tried before the run existed.
const missTTL = 10 * time.Second

// LookupToken registers the live run whose token is token if the store has
// one and this replica does not: a run created on another replica a moment
// ago, whose notification has not arrived. It reports whether it registered
// one. Unknown tokens come from anyone who can reach the proxy, so lookups
// are bounded (four at a time, a miss remembered for ten seconds); a lookup
// that cannot get a slot at once reports false.
func (m *Service) LookupToken(ctx context.Context, token string) bool {
	l := &m.lookups
	l.once.Do(func() {
		l.slots = make(chan struct{}, 4)
		l.missing = map[[32]byte]time.Time{}
	})
	h := rules.HashToken(token)
	now := time.Now()
	l.mu.Lock()
	if t, ok := l.missing[h]; ok && now.Sub(t) < missTTL {
		l.mu.Unlock()
		return false
	}
	l.mu.Unlock()
	select {
	case l.slots <- struct{}{}:
		defer func() { <-l.slots }()
	default:
		return false
	}
	run, err := m.Store.RunByTokenHash(ctx, hex.EncodeToString(h[:]))
	if err != nil || !live(run, now) || m.tracked(run.ID) {
		l.mu.Lock()
		if len(l.missing) >= 10000 {
			clear(l.missing) // bounded: a flood of bad tokens forgets, not grows
		}
		l.missing[h] = now
		l.mu.Unlock()
		return false
	}
	if err := m.register(run); err != nil {
		m.logger().Warn("run from a peer not registered", "run", run.ID, "err", err)
		return false
	}
	m.logger().Info("run registered on first use (created by a peer)", "run", run.ID, "tenant", run.Tenant)
	return true
}
