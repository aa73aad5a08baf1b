package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-egress/sluice/ca"
	"github.com/sluice-egress/sluice/ca/stepca"
	"github.com/sluice-egress/sluice/config"
	"github.com/sluice-egress/sluice/gateway"
	"github.com/sluice-egress/sluice/internal/runstore"
	"github.com/sluice-egress/sluice/rules"
	"github.com/sluice-egress/sluice/store"
)

// Replicas: several `sluice serve` on one PostgreSQL store (store.driver:
// postgres) agree at once. Each publishes what it changes (runs, grants, the
// policy version it loaded) and applies what its peers publish; it resyncs
// on reconnecting and every runs interval; a token of a run created on a
// peer a moment ago is looked up on first use. SQLite is one node: none of
// this runs.

// Timings of the replicas' agreement.
const (
	// heartbeatEvery is how often a replica records its policy version.
	heartbeatEvery = 2 * time.Second
	// peerAlive is how recent a peer's heartbeat must be to count.
	peerAlive = 3 * heartbeatEvery
	// policySkewGrace is how long a replica may run a policy version other
	// than most of its peers' before /readyz fails: long enough for a
	// peer's reload notification and this replica's reload.
	policySkewGrace = 10 * time.Second
)

// openDatabase opens the store that cfg names: SQLite in the data directory
// (the default), or PostgreSQL by the DSN it references.
func openDatabase(ctx context.Context, cfg *config.Config) (*store.Store, error) {
	if cfg.Store.Driver != config.StorePostgres {
		return store.Open(ctx, filepath.Join(cfg.DataDir, store.FileName))
	}
	dsn, err := cfg.StoreDSN()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	st, err := store.OpenPostgres(ctx, dsn)
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	st.Replica = fmt.Sprintf("%s-%d", host, os.Getpid())
	return st, nil
}

// existingStore opens the configured store for a command that only reads
// it; nil when the SQLite file does not exist (it never creates one).
func existingStore(ctx context.Context, cfg *config.Config) (*store.Store, error) {
	if cfg.Store.Driver != config.StorePostgres {
		path := filepath.Join(cfg.DataPath(), store.FileName)
		if _, err := os.Stat(path); err != nil {
			return nil, nil
		}
		return store.Open(ctx, path)
	}
	return openDatabase(ctx, cfg)
}

// replication is a replica's side of the agreement.
type replication struct {
	listener *store.Listener
	// version is the policy version loaded here: a hash of the config file.
	version atomic.Pointer[string]
	// reloads asks the reload worker to reread the file (a peer loaded a
	// policy this replica has not).
	reloads chan string

	mu          sync.Mutex
	majority    string    // the version most live replicas run
	peers       int       // live replicas, this one included
	differSince time.Time // when this replica's version began to differ; zero: it agrees
}

// openReplication wires a replica to its peers, when the store has any:
// the gateway looks up unknown run tokens, reloads publish their version,
// and the metrics show the agreement. Call it after openRuns and openAdmin.
func (s *Server) openReplication() {
	st := s.ops.store
	if st == nil || !st.Notifies() {
		return
	}
	r := &replication{reloads: make(chan string, 1)}
	r.setVersion(s.fileVersion())
	r.listener = &store.Listener{Store: st, OnChange: s.onChange, Logger: s.Logger}
	s.repl = r
	s.gw.Policy = &peerPolicy{Policy: s.gw.Policy, lookup: func(token string) bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		return s.runs.LookupToken(ctx, token)
	}}
	if s.watch != nil {
		counted := s.watch.OnResult
		s.watch.OnResult = func(ok bool) {
			if counted != nil {
				counted(ok)
			}
			if ok {
				s.policyLoaded()
			}
		}
	}
	s.ops.metrics.Registry.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "sluice_replicas",
			Help: "Replicas sharing the store that sent a heartbeat lately, this one included."},
			func() float64 { r.mu.Lock(); defer r.mu.Unlock(); return float64(r.peers) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "sluice_policy_differs",
			Help: "1 while this replica's policy version differs from the one most replicas run."},
			func() float64 {
				r.mu.Lock()
				defer r.mu.Unlock()
				if r.differSince.IsZero() {
					return 0
				}
				return 1
			}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "sluice_store_listening",
			Help: "1 while this replica hears its peers' changes."},
			func() float64 {
				if r.listener.Connected() {
					return 1
				}
				return 0
			}),
	)
}

// runReplication listens for peers' changes, sends heartbeats and rereads
// the policy when a peer loaded another, until ctx ends.
func (s *Server) runReplication(ctx context.Context) {
	r := s.repl
	if r == nil {
		return
	}
	go r.listener.Run(ctx)
	go func() {
		t := time.NewTicker(heartbeatEvery)
		defer t.Stop()
		for {
			s.heartbeat(ctx)
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
				if s.watch != nil && v != r.getVersion() {
					s.watch.Now("a peer loaded policy " + v)
				}
			}
		}
	}()
}

// onChange applies a peer's change. Changes this replica published were
// applied when it made them.
func (s *Server) onChange(c store.Change) {
	if c.Origin != "" && c.Origin == s.ops.store.Replica {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var err error
	switch c.Kind {
	case store.ChangeRunCreated, store.ChangeRunEnded:
		err = s.runs.SyncRun(ctx, c.ID)
	case store.ChangeGrants:
		err = s.runs.RefreshGrants(ctx)
	case store.ChangePolicy:
		select {
		case s.repl.reloads <- c.ID:
		default: // a reread is pending already
		}
	case store.ChangeResync:
		if err = s.runs.Resync(ctx); err == nil {
			err = s.runs.RefreshGrants(ctx)
		}
	}
	if err != nil {
		s.Logger.Error("a peer's change not applied: the next resync will", "kind", c.Kind, "id", c.ID, "err", err)
	}
}

// fileVersion is the version of the policy file as last loaded: the first
// bytes of its hash, or "embedded" without a file.
func (s *Server) fileVersion() string {
	if s.watch == nil {
		return "embedded"
	}
	return s.watch.Version()
}

// policyLoaded runs inside a successful reload (under the reloader's lock):
// a new version is published, so that the peers reread their file at once.
func (s *Server) policyLoaded() {
	r := s.repl
	v := s.fileVersion()
	if v == r.getVersion() {
		return
	}
	r.setVersion(v)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.ops.store.Publish(ctx, store.Change{Kind: store.ChangePolicy, ID: v}); err != nil {
		s.Logger.Warn("policy version not published: peers reread on their own poll", "version", v, "err", err)
	}
}

func (r *replication) getVersion() string {
	if v := r.version.Load(); v != nil {
		return *v
	}
	return ""
}

func (r *replication) setVersion(v string) { r.version.Store(&v) }

// heartbeat records this replica's version and compares it with its peers'.
func (s *Server) heartbeat(ctx context.Context) {
	r, st := s.repl, s.ops.store
	mine := r.getVersion()
	hctx, cancel := context.WithTimeout(ctx, heartbeatEvery)
	defer cancel()
	if err := st.Heartbeat(hctx, store.Replica{ID: st.Replica, PolicyVersion: mine}); err != nil {
		s.Logger.Warn("heartbeat not recorded", "err", err)
		return
	}
	live, err := st.Replicas(hctx, time.Now().Add(-peerAlive))
	if err != nil {
		s.Logger.Warn("peers not read", "err", err)
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
		s.Logger.Warn("policy version differs from most replicas'", "mine", mine, "theirs", top)
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

// replicaReady is the replicas' part of /readyz: this replica hears its
// peers, and its policy has not differed from most of theirs for long.
func (s *Server) replicaReady() error {
	r := s.repl
	if r == nil {
		return nil
	}
	if !r.listener.Connected() {
		return errors.New("store: not listening for peers' changes")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.differSince.IsZero() && time.Since(r.differSince) > policySkewGrace {
		return fmt.Errorf("policy version %s differs from %s, which most replicas run (since %s)",
			r.getVersion(), r.majority, r.differSince.UTC().Format(time.RFC3339))
	}
	return nil
}

// peerPolicy is the gateway's Policy on a replica: a token that identifies
// nobody may belong to a run a peer created a moment ago, so the store is
// asked (bounded by runs.Service.LookupToken) before the client is refused.
type peerPolicy struct {
	gateway.Policy
	lookup func(token string) bool
}

func (p *peerPolicy) Identify(user, token string) (rules.Identity, error) {
	id, err := p.Policy.Identify(user, token)
	if err == nil || token == "" {
		return id, err
	}
	// Asked again whatever the lookup says: the peer's notice may have
	// registered the run while the lookup ran (and made its own fail).
	p.lookup(token)
	return p.Policy.Identify(user, token)
}

// stepCAIssuers builds the step-ca clients of the tenants whose root lives
// there (tenants.<name>.step_ca). A root or key that cannot be read is a
// start-up error.
func stepCAIssuers(cfg *config.Config) (map[string]ca.Issuer, error) {
	var out map[string]ca.Issuer
	for name, t := range cfg.Tenants {
		if t == nil || t.StepCA == nil {
			continue
		}
		sc := t.StepCA
		rootPEM, err := os.ReadFile(cfg.ResolvePath(sc.RootFile))
		if err != nil {
			return nil, fmt.Errorf("tenants.%s.step_ca.root_file: %w", name, err)
		}
		root, err := parseCertPEM(rootPEM)
		if err != nil {
			return nil, fmt.Errorf("tenants.%s.step_ca.root_file: %w", name, err)
		}
		keyPEM, err := os.ReadFile(cfg.ResolvePath(sc.ProvisionerKeyFile))
		if err != nil {
			return nil, fmt.Errorf("tenants.%s.step_ca.provisioner_key_file: %w", name, err)
		}
		key, err := parseECKeyPEM(keyPEM)
		if err != nil {
			return nil, fmt.Errorf("tenants.%s.step_ca.provisioner_key_file: %w", name, err)
		}
		if out == nil {
			out = map[string]ca.Issuer{}
		}
		out[name] = &stepca.Client{URL: sc.URL, Root: root, Provisioner: sc.Provisioner, Key: key, KeyID: sc.KeyID, TTL: sc.TTL()}
	}
	return out, nil
}

func parseCertPEM(b []byte) (*x509.Certificate, error) {
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "CERTIFICATE" {
		return nil, errors.New("no PEM certificate")
	}
	return x509.ParseCertificate(blk.Bytes)
}

// parseECKeyPEM reads a P-256 private key (SEC 1 or PKCS #8). Errors never
// show the key.
func parseECKeyPEM(b []byte) (*ecdsa.PrivateKey, error) {
	blk, _ := pem.Decode(b)
	if blk == nil {
		return nil, errors.New("no PEM key")
	}
	if k, err := x509.ParseECPrivateKey(blk.Bytes); err == nil {
		return k, nil
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if ec, ok := k.(*ecdsa.PrivateKey); err == nil && ok {
		return ec, nil
	}
	return nil, errors.New("not an EC private key (SEC 1 or PKCS #8 PEM; an encrypted one must be decrypted into a Secret)")
}

// storedGrants reads the tenant's approved, unexpired access requests from the
// configured store, when there is one: they are part of the effective policy. It
// never creates a store.
func storedGrants(cfg *config.Config, tenant string) ([]rules.Grant, error) {
	ctx := context.Background()
	st, err := existingStore(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("read grants: %w", err)
	}
	if st == nil {
		return nil, nil
	}
	defer st.Close()
	return runstore.Grants(ctx, st, tenant, time.Now())
}
