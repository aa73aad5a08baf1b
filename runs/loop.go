package runs

import (
	"context"
	"time"
)

// minWake keeps the loop from spinning on a deadline it could not act on
// (an expired run whose end the store refused, say).
const minWake = 200 * time.Millisecond

// Run ends expired runs and refreshes grants at every run or grant expiry
// (so that their tunnels close at once, not at the next sweep) and at least
// every Interval, when it also resyncs runs with the store (what replicas
// sharing it did). It returns when ctx ends.
func (m *Service) Run(ctx context.Context) {
	iv := m.Interval
	if iv <= 0 {
		iv = 30 * time.Second
	}
	wake := m.wakeChan()
	lastResync := time.Now()
	for {
		now := time.Now()
		t := time.NewTimer(max(m.nextDeadline(now, lastResync.Add(iv)).Sub(now), minWake))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-wake:
			t.Stop()
			continue // a sooner deadline may have come: recompute
		case <-t.C:
		}
		m.sweep(ctx)
		if time.Since(lastResync) >= iv {
			lastResync = time.Now()
			if err := m.Resync(ctx); err != nil {
				m.logger().Error("runs not resynced", "err", err)
			}
		}
		if err := m.RefreshGrants(ctx); err != nil {
			m.logger().Error("grants not refreshed", "err", err)
		}
	}
}

// nextDeadline is the first run or grant expiry before limit, or limit.
func (m *Service) nextDeadline(now, limit time.Time) time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	next := limit
	for _, exp := range m.expires {
		if !exp.IsZero() && exp.Before(next) {
			next = exp
		}
	}
	if !m.grantExpiry.IsZero() && m.grantExpiry.Before(next) {
		next = m.grantExpiry
	}
	return next
}

func (m *Service) wakeChan() chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.wake == nil {
		m.wake = make(chan struct{}, 1)
	}
	return m.wake
}

// poke tells the loop to recompute its deadline; m.mu is held.
func (m *Service) poke() {
	if m.wake == nil {
		m.wake = make(chan struct{}, 1)
	}
	select {
	case m.wake <- struct{}{}:
	default:
	}
}
