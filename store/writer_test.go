package store

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-egress/sluice/incident"
)

func TestWriterGroupCommit(t *testing.T) {
	eachDriver(t, func(t *testing.T, db testDB) {
		s := db.Open(t)
		var batches, rows atomic.Int64
		w := &Writer{Store: s, OnBatch: func(n int, _ time.Duration, err error) {
			if err == nil {
				batches.Add(1)
				rows.Add(int64(n))
			}
		}}
		const writers, each = 8, 20
		ids := make(chan string, writers*each)
		var wg sync.WaitGroup
		for g := range writers {
			wg.Go(func() {
				for i := range each {
					id, err := w.Write(context.Background(), incident.Incident{Tenant: "acme", Kind: "deny", Port: g*1000 + i})
					if err != nil {
						t.Error(err)
						return
					}
					// Durable when Write returns: readable at once.
					if _, err := s.GetIncident(context.Background(), id); err != nil {
						t.Errorf("id %s returned before it was committed: %v", id, err)
					}
					ids <- id
				}
			})
		}
		wg.Wait()
		close(ids)
		if err := w.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for id := range ids {
			if seen[id] {
				t.Fatalf("id %s returned twice", id)
			}
			seen[id] = true
		}
		var n int
		s.DB().QueryRow("SELECT COUNT(*) FROM incidents").Scan(&n)
		if n != writers*each || len(seen) != n || rows.Load() != int64(n) {
			t.Fatalf("%d rows, %d ids, %d rows in batches", n, len(seen), rows.Load())
		}
		if batches.Load() >= int64(n) {
			t.Fatalf("%d batches for %d incidents: no group commit", batches.Load(), n)
		}
		t.Logf("%d incidents in %d batches", n, batches.Load())
		if _, err := w.Write(context.Background(), incident.Incident{}); !errors.Is(err, ErrClosed) {
			t.Fatalf("write after close: %v", err)
		}
	})
}

// TestWriterBlocksWhenFullAndDrainsOnClose holds the database's write lock
// from outside, so that the writer cannot commit: the queue fills, further
// writes wait (nothing is dropped), and Close writes everything queued.
func TestWriterBlocksWhenFullAndDrainsOnClose(t *testing.T) {
	eachDriver(t, func(t *testing.T, db testDB) {
		s := db.Open(t)
		ctx := context.Background()
		lock := holdWriteLock(t, s)
		w := &Writer{Store: s, QueueSize: 4, MaxBatch: 2}
		var done atomic.Int64
		var wg sync.WaitGroup
		for range 10 {
			wg.Go(func() {
				if _, err := w.Write(ctx, incident.Incident{Tenant: "acme"}); err != nil {
					t.Error(err)
				}
				done.Add(1)
			})
		}
		waitDepth(t, w, 4)
		// A write with a deadline gives up waiting for room, and says so.
		short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		if _, err := w.Write(short, incident.Incident{Tenant: "acme"}); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("write on a full queue: %v", err)
		}
		if n := done.Load(); n != 0 {
			t.Fatalf("%d writes returned while nothing could be committed", n)
		}
		lock.Rollback()
		if err := w.Close(ctx); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		var n int
		s.DB().QueryRow("SELECT COUNT(*) FROM incidents").Scan(&n)
		if n != 10 || done.Load() != 10 {
			t.Fatalf("%d stored, %d writes returned; want 10", n, done.Load())
		}
	})
}

func TestWriterOneBadIncidentDoesNotSinkItsBatch(t *testing.T) {
	eachDriver(t, func(t *testing.T, db testDB) {
		s := db.Open(t)
		ctx := context.Background()
		dup := NewID(PrefixIncident, t0)
		MustInsert(t, s, incident.Incident{ID: dup, Time: t0})
		lock := holdWriteLock(t, s)
		w := &Writer{Store: s}
		// A first incident takes the writer into a batch that waits for the
		// lock; the next three queue behind it and form one batch.
		errs := make(chan error, 4)
		go func() { _, err := w.Write(ctx, incident.Incident{Tenant: "acme"}); errs <- err }()
		time.Sleep(50 * time.Millisecond)
		waitDepth(t, w, 0)
		for _, id := range []string{"", dup, ""} {
			go func() { _, err := w.Write(ctx, incident.Incident{ID: id, Tenant: "acme"}); errs <- err }()
		}
		waitDepth(t, w, 3)
		lock.Rollback()
		var failed int
		for range 4 {
			if err := <-errs; err != nil {
				failed++
			}
		}
		w.Close(ctx)
		var n int
		s.DB().QueryRow("SELECT COUNT(*) FROM incidents").Scan(&n)
		if failed != 1 || n != 4 {
			t.Fatalf("%d writes failed, %d rows; want 1 failure (the duplicate) and 4 rows", failed, n)
		}
	})
}

func waitDepth(t *testing.T, w *Writer, want int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for w.Depth() != want {
		if time.Now().After(deadline) {
			t.Fatalf("queue depth %d, want %d", w.Depth(), want)
		}
		time.Sleep(time.Millisecond)
	}
}

// BenchmarkWriter measures incidents stored per second through the writer
// with many concurrent writers (group commit; SQLite with synchronous=FULL,
// PostgreSQL with synchronous_commit=on).
func BenchmarkWriter(b *testing.B) {
	eachDriverB(b, func(b *testing.B, db testDB) {
		s := db.Open(b)
		w := &Writer{Store: s}
		b.SetParallelism(64)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := w.Write(context.Background(), incident.Incident{Tenant: "acme", Kind: "deny", Reason: "host-not-allowed",
					Action: "block", Host: "evil.example.test", Port: 443, Method: "CONNECT"}); err != nil {
					b.Error(err)
				}
			}
		})
		b.StopTimer()
		w.Close(context.Background())
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "incidents/s")
	})
}

// BenchmarkInsertBatch measures raw batched inserts (512 per transaction).
func BenchmarkInsertBatch(b *testing.B) {
	eachDriverB(b, func(b *testing.B, db testDB) {
		s := db.Open(b)
		batch := synth(512)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			for j := range batch {
				batch[j].Time = t0.Add(time.Duration(i*len(batch)+j) * time.Millisecond)
				batch[j].ID = NewID(PrefixIncident, batch[j].Time)
			}
			if err := s.InsertIncidents(context.Background(), batch); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N*len(batch))/b.Elapsed().Seconds(), "rows/s")
	})
}
