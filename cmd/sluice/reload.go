package main

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"fmt"
	"log/slog"
	"maps"
	"net/netip"
	"os"
	"os/signal"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sluice-egress/sluice/config"
	"github.com/sluice-egress/sluice/gateway"
	"github.com/sluice-egress/sluice/rules"
	"github.com/sluice-egress/sluice/scanner"
)

// policyHolder is the gateway's Policy: the current engine, swapped atomically on
// reload. Requests on open tunnels meet the new engine from their next request on.
type policyHolder struct {
	cur atomic.Pointer[rules.Engine]
	// OnReload is called after every reload attempt with its result (the metrics helper
	// counts sluice_policy_reloads_total{result}); nil: nothing. Set it before serving.
	OnReload func(ok bool)

	ok, failed atomic.Int64
}

var _ gateway.Policy = (*policyHolder)(nil)

func newPolicyHolder(e *rules.Engine) *policyHolder {
	h := &policyHolder{}
	h.cur.Store(e)
	return h
}

// Engine returns the current engine.
func (h *policyHolder) Engine() *rules.Engine { return h.cur.Load() }

func (h *policyHolder) Identify(user, token string) (rules.Identity, error) {
	return h.cur.Load().Identify(user, token)
}

// Decide asks the current engine. The decision carries what it allows to be dialled,
// so it stays whole if the engine is swapped before the dial.
func (h *policyHolder) Decide(q rules.Query) rules.Decision { return h.cur.Load().Decide(q) }

// swap installs e, carrying the registered runs over.
func (h *policyHolder) swap(e *rules.Engine) {
	e.ShareRuns(h.cur.Load())
	h.cur.Store(e)
}

// Reloads returns how many reloads succeeded and failed since start.
func (h *policyHolder) Reloads() (ok, failed int64) { return h.ok.Load(), h.failed.Load() }

func (h *policyHolder) count(ok bool) {
	if ok {
		h.ok.Add(1)
	} else {
		h.failed.Add(1)
	}
	if h.OnReload != nil {
		h.OnReload(ok)
	}
}

// policyChanger is what the reloader needs of the gateway: *gateway.Gateway re-decides
// its open tunnels and closes those the new policy no longer allows.
type policyChanger interface {
	PolicyChanged() int
}

var _ policyChanger = (*gateway.Gateway)(nil)

// reloader swaps the policy when the config file changes or on SIGHUP.
type reloader struct {
	// Path is the config file.
	Path string
	// Load reads, validates and compiles the config; an error keeps the old policy.
	Load func(path string) (*rules.Engine, *config.Config, error)
	// Holder receives the new engine.
	Holder *policyHolder
	// Gateway, when set, re-checks open tunnels after a swap.
	Gateway policyChanger
	// Applied, when set, applies the rest of a reloaded config that takes
	// effect without a restart (upstream, scanner, credentials) after the swap.
	Applied func(cfg *config.Config)
	// Interval between polls of the file (mtime, size, then content hash). Zero: 2s.
	Interval time.Duration
	Logger   *slog.Logger

	mu      sync.Mutex // one reload at a time
	stamp   fileStamp
	current *config.Config
}

type fileStamp struct {
	mod  time.Time
	size int64
	hash [sha256.Size]byte
}

// start records the file as loaded at start-up.
func (r *reloader) start(cfg *config.Config) {
	r.current = cfg
	r.stamp, _ = stampOf(r.Path, fileStamp{})
}

// stampOf stats the file and hashes it only when mtime or size changed.
func stampOf(path string, prev fileStamp) (fileStamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return prev, err
	}
	if fi.ModTime().Equal(prev.mod) && fi.Size() == prev.size {
		return prev, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return prev, err
	}
	return fileStamp{mod: fi.ModTime(), size: fi.Size(), hash: sha256.Sum256(b)}, nil
}

// Run polls the file and listens for SIGHUP until ctx ends.
func (r *reloader) Run(ctx context.Context) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	iv := r.Interval
	if iv <= 0 {
		iv = 2 * time.Second
	}
	tick := time.NewTicker(iv)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			r.Reload("SIGHUP")
		case <-tick.C:
			r.mu.Lock()
			prev := r.stamp
			st, err := stampOf(r.Path, prev)
			r.mu.Unlock()
			if err == nil && st.hash != prev.hash {
				r.Reload("file changed")
			}
		}
	}
}

// Reload loads the config file and swaps the policy; on failure the previous policy
// stays. It reports whether the swap happened.
func (r *reloader) Reload(why string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	st, statErr := stampOf(r.Path, fileStamp{})
	if statErr == nil {
		// Remember what was tried, also when it fails: a broken file is reported once,
		// not every poll; the next change or SIGHUP tries again.
		r.stamp = st
	}
	engine, cfg, err := r.Load(r.Path)
	if err != nil {
		r.Logger.Error("policy reload failed: keeping the previous policy", "why", why, "err", err)
		r.Holder.count(false)
		return false
	}
	r.warnRestartOnly(cfg)
	r.Holder.swap(engine)
	r.current = cfg
	if r.Applied != nil {
		r.Applied(cfg)
	}
	closed := 0
	if r.Gateway != nil {
		closed = r.Gateway.PolicyChanged()
	}
	r.Logger.Info("policy reloaded", "why", why, "tunnels_closed", closed)
	r.Holder.count(true)
	return true
}

// warnRestartOnly logs the settings a reload does not apply: upstream and
// scanning apply live (applyReload); listeners, the CA settings and the
// scan-memory bound do not.
func (r *reloader) warnRestartOnly(cfg *config.Config) {
	old := r.current
	if old == nil {
		return
	}
	var changed []string
	if old.Listen != cfg.Listen {
		changed = append(changed, "listen")
	}
	if old.CA != cfg.CA {
		changed = append(changed, "ca")
	}
	// The gateway's bound on the bytes held for scanning is a semaphore
	// sized once; bodies of unknown length reserve the max_body_bytes of
	// start-up from it (the scanner itself applies the new limit).
	if old.Scanning.MaxInflightBytes != cfg.Scanning.MaxInflightBytes {
		changed = append(changed, "scanning.max_inflight_bytes")
	}
	if old.Scanning.MaxBodyBytes != cfg.Scanning.MaxBodyBytes && old.Scanning.MaxInflightBytes > 0 {
		changed = append(changed, "scanning.max_body_bytes")
	}
	if len(changed) > 0 {
		r.Logger.Warn("policy reloaded, but these settings apply only after a restart", "keys", changed)
	}
}

// loadPolicy is the Server's reload: the config file read and compiled as at start-up,
// keeping the data directory, with every tenant's CA ready before the swap.
func (s *Server) loadPolicy(path string) (*rules.Engine, *config.Config, error) {
	cfg, err := config.Load(path)
	if err != nil {
		return nil, nil, err
	}
	cfg.DataDir = s.Config.DataDir
	cfg.Listen = s.Config.Listen // --proxy may have overridden it; listeners stay anyway
	engine, err := compile(cfg)
	if err != nil {
		return nil, nil, err
	}
	if err := checkCredentials(cfg); err != nil {
		return nil, nil, err
	}
	for _, t := range engine.Tenants() {
		if _, err := s.cas.Authority(t); err != nil {
			return nil, nil, fmt.Errorf("tenant %s: %w", t, err)
		}
	}
	roots, err := upstreamRoots(cfg)
	if err != nil {
		return nil, nil, err
	}
	sc, err := s.reloadScanner(cfg)
	if err != nil {
		return nil, nil, err
	}
	// Everything that can fail has been built: applyReload only swaps.
	s.staged = &stagedReload{cfg: cfg, hosts: engine.UpstreamHosts(), deny: cfg.Upstream.DenyRanges(), roots: roots, scanner: sc}
	return engine, cfg, nil
}

// stagedReload is what loadPolicy built for applyReload. Both run under the
// reloader's lock, one reload at a time.
type stagedReload struct {
	cfg     *config.Config
	hosts   map[string]netip.Addr
	deny    []netip.Prefix // upstream.deny
	roots   *x509.CertPool
	scanner *scanner.Scanner
}

// reloadScanner compiles the reloaded config's scanner. It keeps the running
// scanner's fingerprint key, canaries and phantoms, so that fingerprints,
// issued canaries and minted phantoms stay valid.
func (s *Server) reloadScanner(cfg *config.Config) (*scanner.Scanner, error) {
	sc, err := buildScanner(cfg, false)
	if err != nil {
		return nil, err
	}
	if s.scanner != nil {
		cur := s.scanner.Current()
		sc.Key, sc.Canaries, sc.Phantoms = cur.Key, cur.Canaries, cur.Phantoms
	}
	return sc, nil
}

// applyReload is the reloader's Applied: after the policy swap it installs
// what loadPolicy built for cfg — upstream.hosts and deny in the dialer, the upstream
// roots (dropping pooled upstream connections when either changed), the
// scanner — then the credentials.
func (s *Server) applyReload(cfg *config.Config) {
	if st := s.staged; st != nil && st.cfg == cfg {
		s.staged = nil
		upstreamChanged := false
		if cur := s.dialer.load(); cur != nil && (!maps.Equal(cur.Hosts, st.hosts) || !slices.Equal(cur.ExtraDeny, st.deny)) {
			// Pooled connections are dropped below: a newly denied range
			// must not stay reachable over one.
			s.dialer.setUpstream(st.hosts, st.deny)
			upstreamChanged = true
		}
		if s.gw != nil && (upstreamChanged || !st.roots.Equal(s.roots)) {
			s.roots = st.roots
			s.gw.SetRootCAs(st.roots)
		}
		if s.scanner != nil {
			s.scanner.swap(st.scanner)
		}
		if s.gw != nil {
			s.gw.SetMaxWebSocketMessage(int64(st.cfg.Scanning.MaxBodyBytes))
		}
	}
	s.applyCredentials(cfg)
	s.auditModes(cfg)
}
