package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing/fstest"
	"time"

	"github.com/sluice-egress/sluice/ca"
	"github.com/sluice-egress/sluice/dashboard"
	"github.com/sluice-egress/sluice/derive"
	"github.com/sluice-egress/sluice/rules"
	"github.com/sluice-egress/sluice/store"
)

// Where a run's container sees the trust files (the platform mounts ca_pem there).
const (
	runCAPath     = "/etc/sluice/ca.pem"
	runBundlePath = "/etc/sluice/bundle.pem"
)

// runGateway is what runs and grants need of the gateway.
type runGateway interface {
	CloseRun(runID string) int
	PolicyChanged() int
}

// runManager creates, restores and ends runs (dashboard.RunManager), and keeps the
// engine's grants in step with the store's approved access requests.
type runManager struct {
	Store *store.Store
	// Engine returns the policy in force; Config the configuration it came from.
	Engine func() *rules.Engine
	Config func() *rules.Config
	CAs    *ca.Store
	// Gateway closes a run's tunnels and re-checks tunnels when a grant goes away.
	Gateway func() runGateway
	// ProxyAddr is the proxy's host:port as containers reach it.
	ProxyAddr func() string
	// MintPhantoms returns the env lines of the run's phantom credentials;
	// ForgetPhantoms drops them when the run ends. Nil: runs get none.
	MintPhantoms   func(tenant, run string) ([]string, error)
	ForgetPhantoms func(tenant, run string) error
	// Interval between sweeps of expired runs and grant refreshes. Zero: 30s.
	Interval time.Duration
	Logger   *slog.Logger

	mu      sync.Mutex
	expires map[string]time.Time // live runs' expiry (zero: none)
	grants  []string             // ids of the grants last installed, sorted
}

var _ dashboard.RunManager = (*runManager)(nil)

// runRecord is what the store keeps in a run's Manifests column: the manifest paths
// and what they derived, so that a restart rebuilds the run's entries without the
// files.
type runRecord struct {
	Files      []string           `json:"files"`
	Derivation *derive.Derivation `json:"derivation,omitempty"`
}

// CreateRun derives the run's presets from its manifests and remote, resolves its
// entries, registers it with the engine and stores it (its token's hash only).
func (m *runManager) CreateRun(ctx context.Context, r dashboard.RunRequest) (dashboard.RunCreated, error) {
	cfg, engine := m.Config(), m.Engine()
	if cfg == nil || engine == nil {
		return dashboard.RunCreated{}, errors.New("runs: no policy loaded")
	}
	fsys := fstest.MapFS{}
	files := make([]string, 0, len(r.Manifests))
	for p, content := range r.Manifests {
		fsys[p] = &fstest.MapFile{Data: []byte(content), Mode: 0o644}
		files = append(files, p)
	}
	sort.Strings(files)
	remote := stripUserinfo(r.RepoRemote)
	der, err := derive.Derive(fsys, remote)
	if err != nil {
		return dashboard.RunCreated{}, fmt.Errorf("%w: %v", dashboard.ErrInvalid, err)
	}
	now := time.Now()
	id := store.NewID(store.PrefixRun, now)
	pol, err := rules.ResolvePolicy(rules.PolicyInput{Config: cfg, Tenant: r.Tenant, Class: r.Class, Run: id,
		Derived: der.Policy(), Extras: r.Extras, Now: now})
	if err != nil {
		return dashboard.RunCreated{}, fmt.Errorf("%w: %v", dashboard.ErrInvalid, strings.TrimPrefix(err.Error(), "rules: "))
	}
	auth, err := m.CAs.Authority(r.Tenant)
	if err != nil {
		return dashboard.RunCreated{}, err
	}
	token, err := rules.NewToken()
	if err != nil {
		return dashboard.RunCreated{}, err
	}
	hash := rules.HashToken(token)
	allow, pass := pol.RunEntries()
	exp := now.Add(r.TTL)
	if err := engine.AddRun(rules.Run{ID: id, Tenant: r.Tenant, Class: pol.Class, TokenHash: hash,
		Entries: allow, Passthrough: pass, Expires: exp}); err != nil {
		return dashboard.RunCreated{}, fmt.Errorf("%w: %v", dashboard.ErrInvalid, strings.TrimPrefix(err.Error(), "rules: "))
	}
	rec, _ := json.Marshal(runRecord{Files: files, Derivation: der})
	extras, _ := json.Marshal(nonNil(r.Extras))
	run, err := m.Store.CreateRun(ctx, store.Run{ID: id, Tenant: r.Tenant, Class: pol.Class, TokenHash: hex.EncodeToString(hash[:]),
		Created: now, Expires: exp, RepoRemote: remote, Manifests: rec, Extra: extras})
	if err != nil {
		engine.RemoveRun(id) // not stored: it must not outlive a restart silently, nor work now
		return dashboard.RunCreated{}, err
	}
	env := envLines(proxyURL(m.ProxyAddr(), r.Tenant, token), runCAPath, runBundlePath)
	if m.MintPhantoms != nil {
		ph, err := m.MintPhantoms(r.Tenant, id)
		if err != nil {
			engine.RemoveRun(id)
			m.Store.EndRun(ctx, id, time.Time{})
			return dashboard.RunCreated{}, fmt.Errorf("run phantoms: %w", err)
		}
		env = append(env, ph...)
	}
	m.track(id, exp)
	m.audit(ctx, r.Actor, "run.created", run.Tenant, id, fmt.Sprintf("class %s, ttl %s, %d derived preset(s)", run.Class, r.TTL, len(der.Presets)))
	m.logger().Info("run created", "run", id, "tenant", run.Tenant, "class", run.Class, "expires", exp, "actor", r.Actor)
	proxy := proxyURL(m.ProxyAddr(), r.Tenant, token)
	return dashboard.RunCreated{Run: run, Token: token, ProxyURL: proxy.String(), CAPEM: string(auth.CertPEM()),
		Env: env, Presets: pol.Presets, Suggestions: pol.Suggestions}, nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// stripUserinfo drops credentials from a remote URL: a remote may carry a token.
func stripUserinfo(remote string) string {
	remote = strings.TrimSpace(remote)
	if !strings.Contains(remote, "://") {
		return remote // scp-like user@host:path: the user is no secret
	}
	u, err := url.Parse(remote)
	if err != nil {
		return ""
	}
	u.User = nil
	return u.String()
}

// EndRun ends a run at once: the engine forgets its token, its open tunnels are closed
// and the store records the end.
func (m *runManager) EndRun(ctx context.Context, id, actor string) (store.Run, error) {
	removed := m.Engine().RemoveRun(id)
	closed := 0
	if gw := m.Gateway(); gw != nil {
		closed = gw.CloseRun(id)
	}
	m.mu.Lock()
	delete(m.expires, id)
	m.mu.Unlock()
	run, err := m.Store.EndRun(ctx, id, time.Time{})
	if err != nil {
		return run, err
	}
	if m.ForgetPhantoms != nil {
		if err := m.ForgetPhantoms(run.Tenant, id); err != nil {
			m.logger().Warn("run phantoms not forgotten", "run", id, "err", err)
		}
	}
	m.audit(ctx, actor, "run.ended", run.Tenant, id, fmt.Sprintf("tunnels closed: %d", closed))
	m.logger().Info("run ended", "run", id, "tenant", run.Tenant, "actor", actor, "was_registered", removed, "tunnels_closed", closed)
	return run, nil
}

func (m *runManager) track(id string, exp time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.expires == nil {
		m.expires = map[string]time.Time{}
	}
	m.expires[id] = exp
}

func (m *runManager) audit(ctx context.Context, actor, action, tenant, target, detail string) {
	if actor == "" {
		actor = "sluice"
	}
	if _, err := m.Store.AppendAudit(context.WithoutCancel(ctx), store.AuditEntry{Actor: actor, Action: action,
		Tenant: tenant, Target: target, Detail: detail}); err != nil {
		m.logger().Error("audit entry not written", "action", action, "target", target, "err", err)
	}
}

func (m *runManager) logger() *slog.Logger {
	if m.Logger != nil {
		return m.Logger
	}
	return slog.Default()
}

// restore re-registers the store's unexpired runs after a restart: only their token
// hashes are needed, so their tokens keep working. A run whose tenant or class is gone
// from the config stays unregistered (its token identifies nobody) and is logged.
func (m *runManager) restore(ctx context.Context) error {
	runs, err := m.Store.ListRuns(ctx, store.RunFilter{Active: true, Limit: 1000})
	if err != nil {
		return fmt.Errorf("runs: restore: %w", err)
	}
	n := 0
	for _, run := range runs {
		if err := m.register(run); err != nil {
			m.logger().Warn("run not restored", "run", run.ID, "tenant", run.Tenant, "err", err)
			continue
		}
		n++
	}
	if n > 0 {
		m.logger().Info("runs restored", "count", n)
	}
	return nil
}

// register rebuilds a stored run's entries with the config in force and adds it.
func (m *runManager) register(run store.Run) error {
	var rec runRecord
	if len(run.Manifests) > 0 && run.Manifests[0] == '{' {
		if err := json.Unmarshal(run.Manifests, &rec); err != nil {
			return fmt.Errorf("manifests record: %w", err)
		}
	}
	var extras []rules.Entry
	if err := json.Unmarshal(run.Extra, &extras); err != nil {
		return fmt.Errorf("extras: %w", err)
	}
	h, err := hex.DecodeString(run.TokenHash)
	if err != nil || len(h) != 32 {
		return errors.New("bad token hash")
	}
	pol, err := rules.ResolvePolicy(rules.PolicyInput{Config: m.Config(), Tenant: run.Tenant, Class: run.Class, Run: run.ID,
		Derived: rec.Derivation.Policy(), Extras: extras})
	if err != nil {
		return err
	}
	allow, pass := pol.RunEntries()
	r := rules.Run{ID: run.ID, Tenant: run.Tenant, Class: run.Class, Entries: allow, Passthrough: pass, Expires: run.Expires}
	copy(r.TokenHash[:], h)
	if err := m.Engine().AddRun(r); err != nil {
		return err
	}
	m.track(run.ID, run.Expires)
	return nil
}

// sweep ends the runs whose TTL has passed (their tokens stopped working at expiry;
// this closes their tunnels and records the end).
func (m *runManager) sweep(ctx context.Context) {
	now := time.Now()
	m.mu.Lock()
	var due []string
	for id, exp := range m.expires {
		if !exp.IsZero() && !now.Before(exp) {
			due = append(due, id)
		}
	}
	m.mu.Unlock()
	slices.Sort(due)
	for _, id := range due {
		if _, err := m.EndRun(ctx, id, "sluice (ttl)"); err != nil {
			m.logger().Error("expired run not ended", "run", id, "err", err)
		}
	}
}

// refreshGrants installs the store's approved, unexpired access requests as the
// engine's grants, after marking expired requests. When a grant went away, open
// tunnels are re-checked so that those it opened close.
func (m *runManager) refreshGrants(ctx context.Context) error {
	now := time.Now()
	if _, err := m.Store.ExpireAccessRequests(ctx, now); err != nil {
		return err
	}
	xs, err := m.Store.ActiveGrants(ctx, now)
	if err != nil {
		return err
	}
	gs := make([]rules.Grant, 0, len(xs))
	ids := make([]string, 0, len(xs))
	for _, x := range xs {
		gs = append(gs, dashboard.GrantOf(x))
		ids = append(ids, x.ID)
	}
	slices.Sort(ids)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.Engine().SetGrants(gs); err != nil {
		m.logger().Error("some grants were not installed", "err", err)
	}
	gone := false
	for _, id := range m.grants {
		if _, found := slices.BinarySearch(ids, id); !found {
			gone = true
			break
		}
	}
	if !slices.Equal(ids, m.grants) {
		m.logger().Info("grants refreshed", "count", len(ids))
	}
	m.grants = ids
	if gone {
		if gw := m.Gateway(); gw != nil {
			if n := gw.PolicyChanged(); n > 0 {
				m.logger().Info("tunnels closed: a grant ended", "count", n)
			}
		}
	}
	return nil
}

// run sweeps expired runs and refreshes grants every Interval until ctx ends.
func (m *runManager) run(ctx context.Context) {
	iv := m.Interval
	if iv <= 0 {
		iv = 30 * time.Second
	}
	t := time.NewTicker(iv)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			m.sweep(ctx)
			if err := m.refreshGrants(ctx); err != nil {
				m.logger().Error("grants not refreshed", "err", err)
			}
		}
	}
}

// currentConfig is the configuration in force: the last one reloaded, or the one
// the server started with.
func (s *Server) currentConfig() *rules.Config {
	if s.reload != nil {
		s.reload.mu.Lock()
		defer s.reload.mu.Unlock()
		if s.reload.current != nil {
			return s.reload.current
		}
	}
	return s.Config
}

// openRuns builds the run manager, re-registers stored runs and installs the grants:
// before the proxy serves, so that a restart keeps every live run's token working.
func (s *Server) openRuns() error {
	s.runs = &runManager{
		Store:  s.ops.store,
		Engine: func() *rules.Engine { return s.policy.Engine() },
		Config: s.currentConfig,
		CAs:    s.cas,
		Gateway: func() runGateway {
			if s.gw == nil {
				return nil
			}
			return s.gw
		},
		ProxyAddr: func() string {
			if s.proxyLn == nil {
				return reachableProxy(s.Config.Listen.Proxy)
			}
			return reachableProxy(s.ProxyAddr())
		},
		MintPhantoms:   func(tenant, run string) ([]string, error) { return s.MintPhantoms(tenant, run) },
		ForgetPhantoms: s.ForgetPhantoms,
		Interval:       s.RunsInterval,
		Logger:         s.Logger,
	}
	ctx := context.Background()
	if err := s.runs.restore(ctx); err != nil {
		return err
	}
	return s.runs.refreshGrants(ctx)
}
