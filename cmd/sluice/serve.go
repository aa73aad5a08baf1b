package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/sluice-egress/sluice/alert"
	"github.com/sluice-egress/sluice/ca"
	"github.com/sluice-egress/sluice/config"
	"github.com/sluice-egress/sluice/dashboard"
	"github.com/sluice-egress/sluice/gateway"
	"github.com/sluice-egress/sluice/gateway/guard"
	"github.com/sluice-egress/sluice/internal/credentials"
	"github.com/sluice-egress/sluice/internal/gatewayconf"
	"github.com/sluice-egress/sluice/internal/incidentsink"
	"github.com/sluice-egress/sluice/internal/ops"
	"github.com/sluice-egress/sluice/internal/reload"
	"github.com/sluice-egress/sluice/internal/replica"
	"github.com/sluice-egress/sluice/internal/sandboxnet"
	"github.com/sluice-egress/sluice/internal/trust"
	"github.com/sluice-egress/sluice/phantom"
	"github.com/sluice-egress/sluice/rules"
	"github.com/sluice-egress/sluice/runs"
	"github.com/sluice-egress/sluice/scanner"
)

// Server is a running gateway wired from a config: Open binds the
// listeners, Run serves until the context ends, then drains.
type Server struct {
	Config *config.Config
	// DrainTimeout bounds how long open tunnels may finish on shutdown. Zero: 30s.
	DrainTimeout time.Duration
	// RunsInterval is how often expired runs are ended and grants refreshed. Zero: 30s.
	RunsInterval time.Duration
	Stdout       io.Writer
	Logger       *slog.Logger

	engine  *rules.Engine
	cas     *ca.Store
	gw      *gateway.Gateway
	proxyLn net.Listener
	events  *incidentsink.Sink
	ops     ops.Ops            // the incident store and the admin listener (admin.go)
	metrics *dashboard.Metrics // set by openStore
	// policy is the gateway's swappable Policy; reload swaps it, when watch
	// (nil without a file) calls it.
	policy *rules.Holder
	reload *reload.Swap[*stagedReload]
	watch  *reload.Watcher
	runs   *runs.Service // runs, access decisions and grants (runs.go)
	alerts *alert.Sink   // webhook alerts (alerts.go); nil without alerts.webhooks
	// phantoms holds the runs' phantom credentials (credentials.go).
	phantoms *phantom.Registry
	// dialer and scanner are the gateway's, swapped on reload (swap.go);
	// roots are the upstream roots in use (reload.go).
	dialer  *guard.Holder
	scanner *scanner.Holder
	roots   *x509.CertPool
	// sandbox is the resolver and the transparent listeners (dns.go); nil
	// before openSandbox.
	sandbox *sandboxnet.Net
	repl    *replica.Replica // agreement with replicas sharing the store (stores.go); nil on SQLite
	review  review           // the review loop (review.go)
}

// Open checks and loads everything the gateway needs and binds the proxy
// listener. Nothing is served before all of it succeeded (fail closed).
func (s *Server) Open() error {
	cfg := s.Config
	engine, err := cfg.Compile()
	if err != nil {
		return err
	}
	s.engine = engine
	if s.cas, err = trust.Open(cfg); err != nil {
		return err
	}
	s.cas.Logger = s.Logger
	roots, err := cfg.UpstreamRoots()
	if err != nil {
		return err
	}
	if err := s.openStore(); err != nil {
		return err
	}
	defer func() {
		if s.proxyLn == nil { // Open failed after the store opened
			s.ops.Close(context.Background())
			if s.sandbox != nil {
				s.sandbox.Close()
			}
		}
	}()
	if err := s.openAlerts(); err != nil {
		return err
	}
	s.policy = rules.NewHolder(engine)
	s.dialer = guard.NewHolder(&guard.Dialer{Hosts: engine.UpstreamHosts(), ExtraDeny: cfg.Upstream.DenyRanges(), Logger: s.Logger})
	s.roots = roots
	s.gw = gatewayconf.Gateway(cfg)
	s.gw.Policy, s.gw.Leaf, s.gw.Dialer, s.gw.RootCAs = s.policy, s.leaf, s.countBytes(s.dialer), roots
	s.gw.Events, s.gw.OnScan, s.gw.Logger = s.withAlerts(s.events), s.metrics.ObserveScan, s.Logger
	// The scanner's rules are compiled here (and again by each reload,
	// before anything is swapped): a bad rule pack is a start-up error, and
	// no request is forwarded unscanned. The fingerprint key is created.
	sc, err := scanner.Build(cfg.ScannerOptions(true))
	if err != nil {
		return err
	}
	s.scanner = scanner.NewHolder(sc)
	s.gw.Scanner = s.scanner
	if err := s.openCredentials(sc); err != nil {
		return err
	}
	// Create every tenant's CA now: a CA that cannot be created or loaded is
	// a start-up error, not a surprise on the first CONNECT.
	for _, t := range engine.Tenants() {
		if _, err := s.cas.Authority(t); err != nil {
			return fmt.Errorf("tenant %s: %w", t, err)
		}
	}
	if cfg.Path != "" {
		s.reload = &reload.Swap[*stagedReload]{Path: cfg.Path, Load: s.loadPolicy, RestartOnly: restartOnly, Apply: s.applyReload, Logger: s.Logger}
		s.reload.Store(&stagedReload{engine: engine, cfg: cfg})
		s.watch = &reload.Watcher{Path: cfg.Path, Reload: s.reload.Reload}
		s.watch.Start()
	}
	if err := s.openSandbox(); err != nil {
		return err
	}
	if err := s.openRuns(); err != nil {
		return err
	}
	s.openReview()
	if err := s.openAdmin(); err != nil {
		return err
	}
	s.openReplication()
	s.proxyLn, err = net.Listen("tcp", cfg.Listen.Proxy)
	if err != nil {
		return fmt.Errorf("proxy listener: %w (change listen.proxy or --proxy)", err)
	}
	return nil
}

func (s *Server) leaf(tenant, host string) (*tls.Certificate, error) {
	a, err := s.cas.Authority(tenant)
	if err != nil {
		return nil, err
	}
	return a.Leaf(host)
}

// ProxyAddr is the bound proxy address (useful with port 0).
func (s *Server) ProxyAddr() string { return s.proxyLn.Addr().String() }

// Run serves until ctx ends, then drains open tunnels for DrainTimeout.
func (s *Server) Run(ctx context.Context) error {
	s.announce()
	errc := make(chan error, 1)
	go func() { errc <- s.gw.Serve(s.proxyLn) }()
	s.sandbox.Serve(ctx)
	s.ops.Serve(ctx)
	defer s.ops.Close(context.Background())
	if s.watch != nil {
		rctx, stopReload := context.WithCancel(ctx)
		defer stopReload()
		go s.watch.Run(rctx)
	}
	if s.runs != nil {
		go s.runs.Run(ctx)
	}
	go s.cas.RunRenewal(ctx, 0) // intermediates from step-ca, if any
	if s.repl != nil {
		s.repl.Run(ctx)
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	drain := s.DrainTimeout
	if drain <= 0 {
		drain = 30 * time.Second
	}
	s.Logger.Info("shutting down", "open_tunnels", s.gw.OpenTunnels(), "drain_timeout", drain)
	sctx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	s.ops.Drain() // /readyz fails from now on
	s.sandbox.Shutdown(sctx)
	err := s.gw.Shutdown(sctx)
	<-errc
	s.closeReview(context.Background())
	s.ops.Close(context.Background()) // drains the incident writer
	s.closeAlerts()
	if errors.Is(err, context.DeadlineExceeded) {
		s.Logger.Warn("drain timeout: closed the tunnels still open")
		err = nil
	}
	s.Logger.Info("stopped")
	return err
}

// announce prints what a platform needs to point a container at the gateway.
// The proxy token is never printed: it is in the 0600 env file.
func (s *Server) announce() {
	cfg := s.Config
	hostport := reachableProxy(s.ProxyAddr())
	// One write, so that a reader who sees the first line sees it all.
	w := new(strings.Builder)
	defer func() { io.WriteString(s.Stdout, w.String()) }()
	fmt.Fprintf(w, "sluice %s: proxy on http://%s\n", versionString(), hostport)
	fmt.Fprintf(w, "admin on http://%s (/healthz, /readyz, /metrics)\n", s.AdminAddr())
	s.sandbox.Announce(w, cfg.DNS.ModeOrDefault())
	for _, t := range s.engine.Tenants() {
		out := filepath.Join(cfg.DataDir, "export", t)
		envPath, lines, token, err := trust.Export(cfg, s.cas, t, out, hostport, "")
		if err != nil {
			fmt.Fprintf(w, "tenant %s: export failed: %v\n", t, err)
			continue
		}
		fmt.Fprintf(w, "tenant %s:\n  CA:       %s\n  env file: %s (mode 0600, holds the proxy token)\n",
			t, filepath.Join(out, "ca.pem"), envPath)
		if p := cfg.TokenPath(cfg.Tenants[t]); p != "" {
			fmt.Fprintf(w, "  token:    %s (the tenant token, for the API: Authorization: Bearer %s:<token>)\n", p, t)
		}
		fmt.Fprintln(w, "  env lines:")
		for _, l := range credentials.Mask(cfg, t, ca.MaskEnv(lines, token)) {
			fmt.Fprintf(w, "    %s\n", l)
		}
	}
	announceDashboard(w, cfg, s.AdminAddr())
	for _, warn := range cfg.PresetWarnings() {
		s.Logger.Warn(warn) // stderr, where serve's warnings go
	}
	if len(s.engine.Tenants()) == 1 && cfg.Path == "" {
		fmt.Fprintln(w, "policy: the embedded default allows nothing; run with --config FILE to allow hosts")
	}
}

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("serve", stderr)
	cfgPath := fs.String("config", "", "config file (default: the embedded default)")
	dataDir := fs.String("data-dir", "", "data directory (overrides data_dir)")
	proxy := fs.String("proxy", "", "proxy listen address (overrides listen.proxy)")
	admin := fs.String("admin", "", "admin (dashboard, API, metrics) listen address (overrides listen.admin)")
	drain := fs.Duration("drain-timeout", 30*time.Second, "how long open tunnels may finish on SIGTERM")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(strings.ToUpper(*logLevel))); err != nil {
		return fmt.Errorf("%w: --log-level: %v", errUsage, err)
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	cfg, err := config.Open(*cfgPath, *dataDir)
	if err != nil {
		return err
	}
	if *proxy != "" {
		cfg.Listen.Proxy = *proxy
	}
	if *admin != "" {
		cfg.Listen.Admin = *admin
	}
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gateway.GCPercent)
	}
	s := &Server{Config: cfg, DrainTimeout: *drain, Stdout: stdout, Logger: logger}
	if err := s.Open(); err != nil {
		return err
	}
	return s.Run(ctx)
}
