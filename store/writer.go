package store

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/sluice-egress/sluice/incident"
)

// Writer stores incidents in batches, one transaction per batch, off the
// gateway's request path. Write waits until the incident's batch is
// committed, so an id it returns is durable; incidents that arrive while a
// batch commits form the next batch (group commit). The queue is bounded:
// when it is full, Write blocks (the proxy slows down) rather than drop an
// incident. Close drains the queue.
type Writer struct {
	// Store is required.
	Store *Store
	// QueueSize bounds the incidents waiting for a batch. Zero: 4096.
	QueueSize int
	// MaxBatch bounds the incidents in one transaction. Zero: 512.
	MaxBatch int
	// Logger nil: slog.Default().
	Logger *slog.Logger
	// OnBatch, if set, is called after each batch with its size, the time
	// its transaction took and the error if it failed (for metrics).
	OnBatch func(n int, d time.Duration, err error)

	start  sync.Once
	mu     sync.RWMutex // write-held by Close; read-held while enqueuing
	closed bool
	queue  chan *pending
	done   chan struct{}
}

type pending struct {
	in  incident.Incident
	err chan error
}

func (w *Writer) init() {
	w.start.Do(func() {
		n := w.QueueSize
		if n <= 0 {
			n = 4096
		}
		w.queue = make(chan *pending, n)
		w.done = make(chan struct{})
		go w.loop()
	})
}

func (w *Writer) logger() *slog.Logger {
	if w.Logger != nil {
		return w.Logger
	}
	return slog.Default()
}

func (w *Writer) maxBatch() int {
	if w.MaxBatch > 0 {
		return w.MaxBatch
	}
	return 512
}

// Write stores in and returns its id (in.ID, or a new one from NewID) once
// the transaction holding it has committed. It blocks while the queue is
// full and while the batch commits; ctx bounds both waits. An incident
// already queued when ctx ends is still written, but Write returns
// ctx.Err() without its id: the caller cannot count on it.
func (w *Writer) Write(ctx context.Context, in incident.Incident) (string, error) {
	w.init()
	if in.Time.IsZero() {
		in.Time = w.Store.now()
	}
	if in.ID == "" {
		in.ID = NewID(PrefixIncident, in.Time)
	}
	p := &pending{in: in, err: make(chan error, 1)}
	w.mu.RLock()
	if w.closed {
		w.mu.RUnlock()
		return "", ErrClosed
	}
	select {
	case w.queue <- p:
		w.mu.RUnlock()
	case <-ctx.Done():
		w.mu.RUnlock()
		return "", ctx.Err()
	}
	select {
	case err := <-p.err:
		if err != nil {
			return "", err
		}
		return in.ID, nil
	case <-ctx.Done():
		// A stalled commit must not hold the caller (the gateway's request
		// path); p.err is buffered, so the writer never blocks on it.
		return "", ctx.Err()
	}
}

// Depth is the number of incidents waiting for a batch.
func (w *Writer) Depth() int {
	w.init()
	return len(w.queue)
}

// Close stops taking incidents and waits until those queued are written, or
// ctx ends. Writes blocked on a full queue get in before it closes.
func (w *Writer) Close(ctx context.Context) error {
	w.init()
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		close(w.queue)
	}
	w.mu.Unlock()
	select {
	case <-w.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (w *Writer) loop() {
	defer close(w.done)
	max := w.maxBatch()
	batch := make([]*pending, 0, max)
	for p := range w.queue {
		batch = append(batch[:0], p)
	fill:
		for len(batch) < max {
			select {
			case p, ok := <-w.queue:
				if !ok {
					break fill
				}
				batch = append(batch, p)
			default:
				break fill
			}
		}
		w.commit(batch)
	}
}

// commit writes a batch, retrying a failed transaction a few times. If it
// still fails, each incident is tried alone so that one bad row cannot take
// its batch-mates with it.
func (w *Writer) commit(batch []*pending) {
	ins := make([]incident.Incident, len(batch))
	for i, p := range batch {
		ins[i] = p.in
	}
	var err error
	for attempt, backoff := 0, 20*time.Millisecond; attempt < 3; attempt, backoff = attempt+1, backoff*4 {
		if attempt > 0 {
			time.Sleep(backoff)
		}
		start := time.Now()
		err = w.Store.InsertIncidents(context.Background(), ins)
		if w.OnBatch != nil {
			w.OnBatch(len(ins), time.Since(start), err)
		}
		if err == nil || errors.Is(err, ErrInvalid) {
			break
		}
	}
	if err == nil {
		for _, p := range batch {
			p.err <- nil
		}
		return
	}
	w.logger().Error("store: writing incidents failed", "batch", len(batch), "err", err)
	if len(batch) == 1 {
		batch[0].err <- err
		return
	}
	for _, p := range batch {
		p.err <- w.Store.InsertIncidents(context.Background(), []incident.Incident{p.in})
	}
}
