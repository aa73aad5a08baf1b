package store

import (
	"context"
	"log/slog"
	"time"
)

// DefaultRetention is how long incidents are kept when nothing is configured.
const DefaultRetention = 90 * 24 * time.Hour

// Retention prunes incidents older than MaxAge and expires access requests
// past their expiry, at start and then every Every.
type Retention struct {
	// Store is required.
	Store *Store
	// MaxAge: incidents older than this are deleted. Zero: DefaultRetention.
	MaxAge time.Duration
	// Every is the interval between runs. Zero: one hour.
	Every time.Duration
	// Now is the clock. Nil: time.Now.
	Now func() time.Time
	// Logger nil: slog.Default().
	Logger *slog.Logger
}

// Once prunes once and returns how many incidents were deleted.
func (r *Retention) Once(ctx context.Context) (int64, error) {
	now := time.Now()
	if r.Now != nil {
		now = r.Now()
	}
	age := r.MaxAge
	if age <= 0 {
		age = DefaultRetention
	}
	n, err := r.Store.PruneIncidents(ctx, now.Add(-age))
	if err != nil {
		return n, err
	}
	if _, err := r.Store.ExpireAccessRequests(ctx, now); err != nil {
		return n, err
	}
	return n, nil
}

// Run prunes at once, then every Every, until ctx ends.
func (r *Retention) Run(ctx context.Context) {
	log := r.Logger
	if log == nil {
		log = slog.Default()
	}
	every := r.Every
	if every <= 0 {
		every = time.Hour
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		n, err := r.Once(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			log.Error("store: retention", "err", err)
		case n > 0:
			log.Info("store: pruned old incidents", "deleted", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
