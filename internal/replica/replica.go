// Package replica keeps gateways that share one PostgreSQL store in agreement:
// each publishes what it changes (runs, grants, the policy version it loaded),
// applies what its peers publish, and says when its policy differs from most
// of theirs.
package replica

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-egress/sluice/store"
)

// Timings of the replicas' agreement.
const (
	// HeartbeatEvery is how often a replica records its policy version.
	HeartbeatEvery = 2 * time.Second
	// PeerAlive is how recent a peer's heartbeat must be to count.
	PeerAlive = 3 * HeartbeatEvery
	// PolicySkewGrace is how long a replica may run a policy version other
	// than most of its peers' before Ready fails: long enough for a peer's
	// reload notification and this replica's reload.
	PolicySkewGrace = 10 * time.Second
)

// Store is what a replica needs of the shared store (*store.Store).
type Store interface {
	Heartbeat(ctx context.Context, r store.Replica) error
	Replicas(ctx context.Context, since time.Time) ([]store.Replica, error)
	Publish(ctx context.Context, c store.Change) error
}

// Runs applies a peer's changes to runs and grants (*runs.Service).
type Runs interface {
	SyncRun(ctx context.Context, id string) error
	RefreshGrants(ctx context.Context) error
	Resync(ctx context.Context) error
}

// Listener hears the peers' changes (*store.Listener, whose OnChange is the
// Replica's OnChange).
type Listener interface {
	Run(ctx context.Context)
	Connected() bool
}

// Replica is one gateway's side of the agreement. Store, Runs, Listener and
// Version are required.
type Replica struct {
	// ID names this replica in the store (store.Store.Replica): the changes
	// it published itself were applied when it made them.
	ID       string
	Store    Store
	Runs     Runs
	Listener Listener
	// Version returns the policy version loaded here (a hash of the file).
	Version func() string
	// Reread rereads the policy file, when a peer loaded a version this
	// replica has not. nil: the replica waits for its own file poll.
	Reread func(why string)
	// SkewGrace overrides PolicySkewGrace when positive.
	SkewGrace time.Duration
	// Logger nil: slog.Default().
	Logger *slog.Logger

	version  atomic.Pointer[string] // the version last published or loaded
	initOnce sync.Once
	reloads  chan string // versions peers loaded, for the reread worker

	mu          sync.Mutex
	majority    string    // the version most live replicas run
	peers       int       // live replicas, this one included
	differSince time.Time // when this replica's version began to differ; zero: it agrees
}

func (r *Replica) init() {
	r.initOnce.Do(func() {
		r.reloads = make(chan string, 1)
		if r.version.Load() == nil {
			r.SetVersion(r.Version())
		}
	})
}

func (r *Replica) logger() *slog.Logger {
	if r.Logger != nil {
		return r.Logger
	}
	return slog.Default()
}

// CurrentVersion is the policy version this replica runs, as its peers see it.
func (r *Replica) CurrentVersion() string {
	r.init()
	if v := r.version.Load(); v != nil {
		return *v
	}
	return ""
}

// SetVersion records v as the version loaded here, without publishing it.
func (r *Replica) SetVersion(v string) { r.version.Store(&v) }

// Run listens for peers' changes, sends heartbeats and rereads the policy
// when a peer loaded another, until ctx ends. It returns at once.
func (r *Replica) Run(ctx context.Context) {
	r.init()
	go r.Listener.Run(ctx)
	go func() {
		t := time.NewTicker(HeartbeatEvery)
		defer t.Stop()
		for {
			r.Heartbeat(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case v := <-r.reloads:
				if r.Reread != nil && v != r.CurrentVersion() {
					r.Reread("a peer loaded policy " + v)
				}
			}
		}
	}()
}

// OnChange applies a peer's change (the Listener's OnChange).
func (r *Replica) OnChange(c store.Change) {
	r.init()
	if c.Origin != "" && c.Origin == r.ID {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var err error
	switch c.Kind {
	case store.ChangeRunCreated, store.ChangeRunEnded:
		err = r.Runs.SyncRun(ctx, c.ID)
	case store.ChangeGrants:
		err = r.Runs.RefreshGrants(ctx)
	case store.ChangePolicy:
		select {
		case r.reloads <- c.ID:
		default: // a reread is pending already
		}
	case store.ChangeResync:
		if err = r.Runs.Resync(ctx); err == nil {
			err = r.Runs.RefreshGrants(ctx)
		}
	}
	if err != nil {
		r.logger().Error("a peer's change not applied: the next resync will", "kind", c.Kind, "id", c.ID, "err", err)
	}
}

// PolicyLoaded runs after a successful reload: a new version is published,
// so that the peers reread their file at once.
func (r *Replica) PolicyLoaded() {
	r.init()
	v := r.Version()
	if v == r.CurrentVersion() {
		return
	}
	r.SetVersion(v)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.Store.Publish(ctx, store.Change{Kind: store.ChangePolicy, ID: v}); err != nil {
		r.logger().Warn("policy version not published: peers reread on their own poll", "version", v, "err", err)
	}
}

// Heartbeat records this replica's version and compares it with its peers'.
func (r *Replica) Heartbeat(ctx context.Context) {
	mine := r.CurrentVersion()
	hctx, cancel := context.WithTimeout(ctx, HeartbeatEvery)
	defer cancel()
	if err := r.Store.Heartbeat(hctx, store.Replica{ID: r.ID, PolicyVersion: mine}); err != nil {
		r.logger().Warn("heartbeat not recorded", "err", err)
		return
	}
	live, err := r.Store.Replicas(hctx, time.Now().Add(-PeerAlive))
	if err != nil {
		r.logger().Warn("peers not read", "err", err)
		return
	}
	count := map[string]int{}
	for _, p := range live {
		count[p.PolicyVersion]++
	}
	top, differs := majority(count, mine)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.majority, r.peers = top, len(live)
	switch {
	case !differs:
		r.differSince = time.Time{}
	case r.differSince.IsZero():
		r.differSince = time.Now()
		r.logger().Warn("policy version differs from most replicas'", "mine", mine, "theirs", top)
	}
}

// majority is the version most replicas run, and whether mine is less
// common than it (a tie leaves everyone in agreement).
func majority(count map[string]int, mine string) (top string, differs bool) {
	n := 0
	for _, c := range count {
		n = max(n, c)
	}
	if count[mine] == n {
		return mine, false
	}
	for v, c := range count {
		if c == n && (top == "" || v < top) {
			top = v
		}
	}
	return top, true
}

// Ready is the replica's part of /readyz: it hears its peers, and its policy
// has not differed from most of theirs for longer than SkewGrace.
func (r *Replica) Ready() error {
	if !r.Listener.Connected() {
		return errors.New("store: not listening for peers' changes")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	grace := PolicySkewGrace
	if r.SkewGrace > 0 {
		grace = r.SkewGrace
	}
	if !r.differSince.IsZero() && time.Since(r.differSince) > grace {
		return fmt.Errorf("policy version %s differs from %s, which most replicas run (since %s)",
			r.CurrentVersion(), r.majority, r.differSince.UTC().Format(time.RFC3339))
	}
	return nil
}

// Differing reports since when this replica's version differs from the
// majority's; zero while it agrees.
func (r *Replica) Differing() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.differSince
}

// Collectors are the agreement's metrics: sluice_replicas,
// sluice_policy_differs and sluice_store_listening.
func (r *Replica) Collectors() []prometheus.Collector {
	b := func(v bool) float64 {
		if v {
			return 1
		}
		return 0
	}
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "sluice_replicas",
			Help: "Replicas sharing the store that sent a heartbeat lately, this one included."},
			func() float64 { r.mu.Lock(); defer r.mu.Unlock(); return float64(r.peers) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "sluice_policy_differs",
			Help: "1 while this replica's policy version differs from the one most replicas run."},
			func() float64 { return b(!r.Differing().IsZero()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "sluice_store_listening",
			Help: "1 while this replica hears its peers' changes."},
			func() float64 { return b(r.Listener.Connected()) }),
	}
}
