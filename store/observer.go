package store

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// ObservationWriter counts observations in memory and writes them to the
// store in batches off the hot path: Add is a map update under a lock and
// never waits for the store. Past MaxPending distinct keys between two
// flushes, new keys are dropped (and counted), never blocking.
type ObservationWriter struct {
	// Store is required.
	Store *Store
	// Interval between flushes. Zero: 2s.
	Interval time.Duration
	// MaxPending bounds the distinct observations held between flushes.
	// Zero: 10000.
	MaxPending int
	// MaxPerTenant bounds the rows kept per tenant. Zero:
	// DefaultMaxObservations.
	MaxPerTenant int
	// Logger nil: slog.Default().
	Logger *slog.Logger

	mu      sync.Mutex
	pending map[obsKey]*Observation
	dropped int64
	once    sync.Once
	stop    chan struct{}
	done    chan struct{}
}

type obsKey struct {
	tenant, class, run, host, method, path, verdict string
	port                                            int
}

// Add counts one observation; it starts the flushing on first use.
func (w *ObservationWriter) Add(o Observation) {
	w.once.Do(w.start)
	now := time.Now()
	k := obsKey{o.Tenant, o.Class, o.Run, o.Host, o.Method, o.Path, o.Verdict, o.Port}
	w.mu.Lock()
	defer w.mu.Unlock()
	if p := w.pending[k]; p != nil {
		p.Count++
		p.LastSeen = now
		return
	}
	max := w.MaxPending
	if max <= 0 {
		max = 10000
	}
	if w.pending == nil || len(w.pending) >= max { // closed, or full
		w.dropped++
		return
	}
	o.Count, o.FirstSeen, o.LastSeen = 1, now, now
	w.pending[k] = &o
}

func (w *ObservationWriter) start() {
	w.mu.Lock()
	w.pending = map[obsKey]*Observation{}
	w.mu.Unlock()
	w.stop, w.done = make(chan struct{}), make(chan struct{})
	iv := w.Interval
	if iv <= 0 {
		iv = 2 * time.Second
	}
	go func() {
		defer close(w.done)
		t := time.NewTicker(iv)
		defer t.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-t.C:
				w.flush(context.Background())
			}
		}
	}()
}

// flush writes what was counted since the last flush.
func (w *ObservationWriter) flush(ctx context.Context) {
	w.mu.Lock()
	batch := make([]Observation, 0, len(w.pending))
	for _, o := range w.pending {
		batch = append(batch, *o)
	}
	w.pending = map[obsKey]*Observation{}
	dropped := w.dropped
	w.dropped = 0
	w.mu.Unlock()
	if dropped > 0 {
		w.logger().Warn("observations dropped: too many distinct ones between flushes", "dropped", dropped)
	}
	if err := w.Store.RecordObservations(ctx, batch, w.MaxPerTenant); err != nil {
		w.logger().Error("observations not written", "count", len(batch), "err", err)
	}
}

// Close writes what is pending and stops. It is safe to call twice, and
// on a writer never used.
func (w *ObservationWriter) Close(ctx context.Context) error {
	started := true
	w.once.Do(func() { started = false })
	if !started {
		return nil
	}
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	select {
	case <-w.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	w.flush(ctx)
	return nil
}

func (w *ObservationWriter) logger() *slog.Logger {
	if w.Logger != nil {
		return w.Logger
	}
	return slog.Default()
}
