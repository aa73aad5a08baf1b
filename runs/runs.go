// Package runs is the service in the middle: it creates, restores and ends
// runs, decides access requests and keeps the policy's grants in step with
// the approved ones, for the HTTP API and the CLI alike.
package runs

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing/fstest"
	"time"

	"github.com/sluice-egress/sluice/derive"
	"github.com/sluice-egress/sluice/rules"
)

// Gateway is what runs and grants need of the gateway.
type Gateway interface {
	// CloseRun closes a run's open tunnels and returns how many.
	CloseRun(runID string) int
	// PolicyChanged re-checks open tunnels against the policy and returns how
	// many it closed.
	PolicyChanged() int
}

// Service creates, restores and ends runs, and keeps the engine's grants in
// step with the store's approved access requests. Store and Engine are
// required; every other nil field has the default its comment gives.
type Service struct {
	Store Store
	// Engine returns the policy in force (it changes on reload); runs and
	// grants are registered with it. A nil result: no policy loaded.
	Engine func() *rules.Engine
	// Resolve resolves a run's effective policy with the configuration in
	// force (cmd binds it to rules.ResolvePolicy and the config). Nil: runs
	// cannot be created or restored.
	Resolve func(rules.PolicyInput) (*rules.EffectivePolicy, error)
	// TenantCA returns the tenant CA's certificate (PEM) for a new run's answer.
	// Nil: the answer carries none.
	TenantCA func(tenant string) ([]byte, error)
	// Gateway closes a run's tunnels and re-checks tunnels when a grant goes
	// away. Nil, or a nil result: no gateway to tell.
	Gateway func() Gateway
	// ProxyAddr is the proxy's host:port as containers reach it.
	ProxyAddr func() string
	// Env returns the env lines a run's container sets for its proxy URL
	// (proxy and trust variables). Nil: none.
	Env func(proxy *url.URL) []string
	// MintPhantoms returns the env lines of the run's phantom credentials;
	// ForgetPhantoms drops them when the run ends. Nil: runs get none.
	MintPhantoms   func(tenant, run string) ([]string, error)
	ForgetPhantoms func(tenant, run string) error
	// Sandboxes registers the runs' sandbox addresses (Request.Sandbox). Nil: a run
	// that names one is refused.
	Sandboxes Sandboxes
	// Interval between sweeps of expired runs and grant refreshes. Zero: 30s.
	Interval time.Duration
	// Logger nil: slog.Default().
	Logger *slog.Logger
	// Review keeps the context of access requests sandboxes file (and hold
	// connections for), and reviewers' scopes (review.go). Nil: sandboxes
	// cannot file, and approvals grant for the whole tenant.
	Review ReviewStore
	// FilingBurst and FilingEvery bound the requests one run files: Burst
	// at once, one more every Every. Zero: 5 and a minute.
	FilingBurst int
	FilingEvery time.Duration
	// OnAccess is told of every request filed, joined or decided (the
	// dashboard's live queue, webhooks). It must not block. Nil: nobody.
	OnAccess func(AccessRequest, AccessContext)

	review  reviewState
	mu      sync.Mutex
	expires map[string]time.Time // live runs' expiry (zero: none)
	grants  []string             // ids of the grants last installed, sorted
	lookups lookups              // LookupToken's bounds
	// grantExpiry is the first expiry among the grants installed; wake
	// tells the loop that a sooner deadline may have come (loop.go).
	grantExpiry time.Time
	wake        chan struct{}
}

// Request asks for a new run.
type Request struct {
	Tenant, Class string
	// TTL ends the run after its creation (the API defaults and bounds it).
	TTL time.Duration
	// RepoRemote is the repository's git remote ("" for none); credentials in
	// it are dropped.
	RepoRemote string
	// Manifests are the repository's manifests by path relative to its root
	// ("package.json", "svc/go.mod"), for derive.Derive.
	Manifests map[string]string
	// Extras are the run's own allow entries (within the class's run_extras).
	Extras []rules.Entry
	// Sandbox is the sandbox's address (a /32 or /128) or network, from ParseSandbox:
	// its DNS queries and redirected connections are the run's. Zero: none.
	Sandbox netip.Prefix
	// Actor is who asks, for the audit log.
	Actor string
}

// Created is a new run and what a sandbox needs to use it.
type Created struct {
	Run Run
	// Token is the run's proxy token, returned once; only its hash is kept.
	Token string
	// ProxyURL carries the run's credentials (tenant:token).
	ProxyURL string
	// CAPEM is the tenant CA's certificate.
	CAPEM string
	// Env are the lines a container sets (proxy and trust variables, phantoms).
	Env []string
	// Presets and Suggestions say what the repository selected and what it names that
	// the policy lacks.
	Presets     []rules.PresetUse
	Suggestions []rules.Suggestion
}

// record is what the store keeps in a run's Manifests column: the manifest paths
// and what they derived, so that a restart rebuilds the run's entries without the
// files.
type record struct {
	Files      []string           `json:"files"`
	Derivation *derive.Derivation `json:"derivation,omitempty"`
	// Sandbox is the run's sandbox address or network (sandbox.go), "" for none.
	Sandbox string `json:"sandbox,omitempty"`
}

// CreateRun derives the run's presets from its manifests and remote, resolves its
// entries, registers it with the engine and stores it (its token's hash only).
// Invalid input wraps ErrInvalid.
func (m *Service) CreateRun(ctx context.Context, r Request) (Created, error) {
	engine := m.engine()
	if m.Resolve == nil || engine == nil {
		return Created{}, errors.New("runs: no policy loaded")
	}
	fsys := fstest.MapFS{}
	files := make([]string, 0, len(r.Manifests))
	for p, content := range r.Manifests {
		fsys[p] = &fstest.MapFile{Data: []byte(content), Mode: 0o644}
		files = append(files, p)
	}
	sort.Strings(files)
	remote := StripUserinfo(r.RepoRemote)
	der, err := derive.Derive(fsys, remote)
	if err != nil {
		return Created{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	now := time.Now()
	id := m.Store.NewRunID(now)
	pol, err := m.Resolve(rules.PolicyInput{Tenant: r.Tenant, Class: r.Class, Run: id,
		Derived: der.Policy(), Extras: r.Extras, Now: now})
	if err != nil {
		return Created{}, fmt.Errorf("%w: %v", ErrInvalid, strings.TrimPrefix(err.Error(), "rules: "))
	}
	var caPEM []byte
	if m.TenantCA != nil {
		if caPEM, err = m.TenantCA(r.Tenant); err != nil {
			return Created{}, err
		}
	}
	token, err := rules.NewToken()
	if err != nil {
		return Created{}, err
	}
	hash := rules.HashToken(token)
	allow, pass := pol.RunEntries()
	exp := now.Add(r.TTL)
	if err := engine.AddRun(rules.Run{ID: id, Tenant: r.Tenant, Class: pol.Class, TokenHash: hash,
		Entries: allow, Passthrough: pass, Expires: exp}); err != nil {
		return Created{}, fmt.Errorf("%w: %v", ErrInvalid, strings.TrimPrefix(err.Error(), "rules: "))
	}
	if err := m.claimSandbox(r.Sandbox, rules.Identity{Tenant: r.Tenant, Class: pol.Class, Run: id}); err != nil {
		engine.RemoveRun(id)
		return Created{}, err
	}
	rec := record{Files: files, Derivation: der}
	if r.Sandbox.IsValid() {
		rec.Sandbox = r.Sandbox.String()
	}
	recJSON, _ := json.Marshal(rec)
	extras, _ := json.Marshal(nonNil(r.Extras))
	run, err := m.Store.CreateRun(ctx, Run{ID: id, Tenant: r.Tenant, Class: pol.Class, TokenHash: hex.EncodeToString(hash[:]),
		Created: now, Expires: exp, RepoRemote: remote, Manifests: recJSON, Extra: extras})
	if err != nil {
		engine.RemoveRun(id) // not stored: it must not outlive a restart silently, nor work now
		m.releaseSandbox(id)
		return Created{}, err
	}
	proxy := &url.URL{Scheme: "http", User: url.UserPassword(r.Tenant, token), Host: m.ProxyAddr()}
	var env []string
	if m.Env != nil {
		env = m.Env(proxy)
	}
	if m.MintPhantoms != nil {
		ph, err := m.MintPhantoms(r.Tenant, id)
		if err != nil {
			engine.RemoveRun(id)
			m.releaseSandbox(id)
			m.Store.EndRun(ctx, id, time.Time{})
			return Created{}, fmt.Errorf("run phantoms: %w", err)
		}
		env = append(env, ph...)
	}
	m.track(id, exp)
	m.audit(ctx, r.Actor, "run.created", run.Tenant, id, fmt.Sprintf("class %s, ttl %s, %d derived preset(s)", run.Class, r.TTL, len(der.Presets)))
	m.logger().Info("run created", "run", id, "tenant", run.Tenant, "class", run.Class, "expires", exp, "actor", r.Actor)
	return Created{Run: run, Token: token, ProxyURL: proxy.String(), CAPEM: string(caPEM),
		Env: env, Presets: pol.Presets, Suggestions: pol.Suggestions}, nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// StripUserinfo drops credentials from a remote URL: a remote may carry a token.
func StripUserinfo(remote string) string {
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
func (m *Service) EndRun(ctx context.Context, id, actor string) (Run, error) {
	removed := false
	if e := m.engine(); e != nil {
		removed = e.RemoveRun(id)
	}
	m.releaseSandbox(id) // before the tunnels close: nothing new is the run's
	closed := 0
	if gw := m.gateway(); gw != nil {
		closed = gw.CloseRun(id)
	}
	m.mu.Lock()
	delete(m.expires, id)
	m.mu.Unlock()
	at := time.Now()
	run, err := m.Store.EndRun(ctx, id, at)
	if err != nil {
		return run, err
	}
	if m.ForgetPhantoms != nil {
		if err := m.ForgetPhantoms(run.Tenant, id); err != nil {
			m.logger().Warn("run phantoms not forgotten", "run", id, "err", err)
		}
	}
	// The store keeps the first end: when it is not ours, another replica
	// (or an earlier call) ended the run and wrote the audit entry.
	if run.Ended.Equal(at) {
		m.audit(ctx, actor, "run.ended", run.Tenant, id, fmt.Sprintf("tunnels closed: %d", closed))
	}
	m.logger().Info("run ended", "run", id, "tenant", run.Tenant, "actor", actor, "was_registered", removed, "tunnels_closed", closed)
	return run, nil
}

func (m *Service) track(id string, exp time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.expires == nil {
		m.expires = map[string]time.Time{}
	}
	m.expires[id] = exp
	m.poke()
}

func (m *Service) audit(ctx context.Context, actor, action, tenant, target, detail string) {
	if actor == "" {
		actor = "sluice"
	}
	if _, err := m.Store.AppendAudit(context.WithoutCancel(ctx), AuditEntry{Actor: actor, Action: action,
		Tenant: tenant, Target: target, Detail: detail}); err != nil {
		m.logger().Error("audit entry not written", "action", action, "target", target, "err", err)
	}
}

func (m *Service) logger() *slog.Logger {
	if m.Logger != nil {
		return m.Logger
	}
	return slog.Default()
}

func (m *Service) engine() *rules.Engine {
	if m.Engine == nil {
		return nil
	}
	return m.Engine()
}

func (m *Service) gateway() Gateway {
	if m.Gateway == nil {
		return nil
	}
	return m.Gateway()
}

// Open re-registers the store's unexpired runs after a restart and installs
// the grants: call it before the proxy serves, so that a restart keeps every
// live run's token working. Only the runs' token hashes are needed. A run
// whose tenant or class is gone from the config stays unregistered (its token
// identifies nobody) and is logged.
func (m *Service) Open(ctx context.Context) error {
	if err := m.restore(ctx); err != nil {
		return err
	}
	return m.RefreshGrants(ctx)
}

func (m *Service) restore(ctx context.Context) error {
	runs, err := m.Store.ActiveRuns(ctx)
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
func (m *Service) register(run Run) error {
	var rec record
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
	engine := m.engine()
	if m.Resolve == nil || engine == nil {
		return errors.New("no policy loaded")
	}
	pol, err := m.Resolve(rules.PolicyInput{Tenant: run.Tenant, Class: run.Class, Run: run.ID,
		Derived: rec.Derivation.Policy(), Extras: extras})
	if err != nil {
		return err
	}
	allow, pass := pol.RunEntries()
	r := rules.Run{ID: run.ID, Tenant: run.Tenant, Class: run.Class, Entries: allow, Passthrough: pass, Expires: run.Expires}
	copy(r.TokenHash[:], h)
	if err := engine.AddRun(r); err != nil {
		return err
	}
	if rec.Sandbox != "" {
		p, err := netip.ParsePrefix(rec.Sandbox)
		if err == nil {
			err = m.claimSandbox(p, rules.Identity{Tenant: run.Tenant, Class: run.Class, Run: run.ID})
		}
		if err != nil {
			engine.RemoveRun(run.ID)
			return fmt.Errorf("sandbox %s: %w", rec.Sandbox, err)
		}
	}
	m.track(run.ID, run.Expires)
	return nil
}

// sweep ends the runs whose TTL has passed (their tokens stopped working at expiry;
// this closes their tunnels and records the end).
func (m *Service) sweep(ctx context.Context) {
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
