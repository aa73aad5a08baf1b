package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-egress/sluice/config"
	"github.com/sluice-egress/sluice/gateway"
	"github.com/sluice-egress/sluice/gateway/guard"
	"github.com/sluice-egress/sluice/internal/testnet"
	"github.com/sluice-egress/sluice/rules"
	"github.com/sluice-egress/sluice/scanner"
)

// liveWorld is a Server as `sluice serve` wires it, with its config file,
// on loopback, reloaded by hand (Reload) between requests.
type liveWorld struct {
	s      *Server
	dir    string
	port   int // every upstream's port, on 127.0.0.1 and 127.0.0.2
	client *http.Client
	log    *syncBuffer
}

// liveParams fills liveConfig.
type liveParams struct {
	addr    string // where upstream.hosts maps api.example.test
	roots   string // upstream.extra_roots
	actions string // scanning.actions
	extra   string // another allowed host
	deny    string // upstream.deny
	scan    string // more scanning keys, one line
}

const liveConfig = `version: 1
listen: {proxy: 127.0.0.1:0, admin: 127.0.0.1:0}
data_dir: data
upstream:
  extra_roots: [%[2]s]
  hosts:
    api.example.test: %[3]s
    new.example.test: 127.0.0.1
  deny: [%[6]s]
scanning:
  rule_packs: [pack.toml]
  actions: {%[4]s}
  %[7]s
tenants:
  acme:
    token_file: acme.token
    classes:
      agent:
        allow:
          - {host: api.example.test, ports: [%[1]d]}%[5]s
`

// livePack adds a rule that finds a marker (blocked by default, as secrets are).
const livePack = `[[rules]]
id = "live-test-marker"
description = "a marker for the reload tests"
regex = '''LIVEMARKER-[0-9]{12}'''
keywords = ["livemarker"]
`

const liveMarker = "LIVEMARKER-123456789012"

func (w *liveWorld) write(t *testing.T, p liveParams) {
	t.Helper()
	extra := ""
	if p.extra != "" {
		extra = fmt.Sprintf("\n          - {host: %s, ports: [%d]}", p.extra, w.port)
	}
	mustWriteFile(t, filepath.Join(w.dir, "sluice.yaml"), fmt.Sprintf(liveConfig, w.port, p.roots, p.addr, p.actions, extra, p.deny, p.scan))
}

// newLiveWorld starts two upstreams for api.example.test, answering "A" on
// 127.0.0.1 and "B" on 127.0.0.2, and the Server with p.
func newLiveWorld(t *testing.T, p liveParams) *liveWorld {
	t.Helper()
	w := &liveWorld{dir: t.TempDir(), log: &syncBuffer{}}
	upCA := testnet.NewTestCA(t, "upstream")
	if path := upCA.WritePEM(t, w.dir); filepath.Base(path) != "upstream-ca.pem" {
		t.Fatalf("upstream CA written to %s", path)
	}
	for i, ip := range []string{"127.0.0.1", "127.0.0.2"} {
		l, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(w.port)))
		if err != nil {
			t.Skipf("cannot listen on %s: %v", ip, err)
		}
		w.port = l.Addr().(*net.TCPAddr).Port
		name := string(rune('A' + i))
		srv := &http.Server{
			Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				io.WriteString(rw, name)
			}),
			TLSConfig: upCA.ServerTLS(t, "api.example.test", "new.example.test"),
			ErrorLog:  log.New(io.Discard, "", 0), // the handshakes the gateway refuses
		}
		go srv.ServeTLS(l, "", "")
		t.Cleanup(func() { srv.Close() })
	}
	tok, _ := rules.NewToken()
	mustWriteFile(t, filepath.Join(w.dir, "acme.token"), tok+"\n")
	mustWriteFile(t, filepath.Join(w.dir, "pack.toml"), livePack)
	w.write(t, p)
	cfg, err := config.Open(filepath.Join(w.dir, "sluice.yaml"), "")
	if err != nil {
		t.Fatal(err)
	}
	w.s = &Server{Config: cfg, Stdout: io.Discard, Logger: slog.New(slog.NewTextHandler(w.log, nil)), DrainTimeout: time.Second}
	if err := w.s.Open(); err != nil {
		t.Fatal(err)
	}
	// The upstreams live on loopback: take loopback out of the guard's deny
	// ranges. A reload keeps these settings and replaces only the hosts and
	// the added ranges (upstream.deny), which Open set.
	w.s.dialer.Store(&guard.Dialer{Hosts: w.s.engine.UpstreamHosts(), Deny: withoutLoopback(guard.DefaultDeny()),
		ExtraDeny: w.s.dialer.Load().ExtraDeny, Self: func() []netip.Addr { return nil }})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.s.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	a, err := w.s.cas.Authority("acme")
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(a.Certificate())
	proxy := &url.URL{Scheme: "http", User: url.UserPassword("acme", tok), Host: w.s.ProxyAddr()}
	w.client = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		Proxy: http.ProxyURL(proxy), TLSClientConfig: &tls.Config{RootCAs: roots}}}
	t.Cleanup(w.client.CloseIdleConnections)
	return w
}

// reload rewrites the config file with p and reloads it as SIGHUP does.
func (w *liveWorld) reload(t *testing.T, p liveParams) bool {
	t.Helper()
	w.write(t, p)
	return w.s.watch.Now("test")
}

// post sends body to host through the gateway and returns the status, the
// Sluice-Reason and the upstream's answer.
func (w *liveWorld) post(t *testing.T, host, body string) (int, string, string) {
	t.Helper()
	u := "https://" + net.JoinHostPort(host, strconv.Itoa(w.port)) + "/v1/x"
	resp, err := w.client.Post(u, "text/plain", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Sluice-Reason"), string(b)
}

// upstream.extra_roots and upstream.hosts apply from the next request on,
// over a client tunnel (and a pooled upstream connection) opened before; a
// reload whose roots cannot be read changes nothing.
func TestReloadAppliesUpstream(t *testing.T) {
	p := liveParams{addr: "127.0.0.1"}
	w := newLiveWorld(t, p)
	if code, reason, _ := w.post(t, "api.example.test", "hi"); code != http.StatusBadGateway || reason != gateway.ReasonUpstreamTLS {
		t.Fatalf("without extra_roots: %d %q, want 502 %s", code, reason, gateway.ReasonUpstreamTLS)
	}

	p.roots = "upstream-ca.pem"
	if !w.reload(t, p) {
		t.Fatalf("reload failed: %s", w.log)
	}
	if code, reason, body := w.post(t, "api.example.test", "hi"); code != http.StatusOK || body != "A" {
		t.Fatalf("after adding extra_roots: %d %q %q, want 200 from A", code, reason, body)
	}

	p.addr = "127.0.0.2"
	if !w.reload(t, p) {
		t.Fatalf("reload failed: %s", w.log)
	}
	if code, reason, body := w.post(t, "api.example.test", "hi"); code != http.StatusOK || body != "B" {
		t.Fatalf("after mapping api.example.test to 127.0.0.2: %d %q %q, want 200 from B", code, reason, body)
	}
	if strings.Contains(w.log.String(), "apply only after a restart") {
		t.Errorf("upstream changes reported as restart-only: %s", w.log)
	}

	bad := liveParams{addr: "127.0.0.1", roots: "missing-ca.pem"}
	if w.reload(t, bad) {
		t.Fatal("a reload with an unreadable extra root succeeded")
	}
	if code, reason, body := w.post(t, "api.example.test", "hi"); code != http.StatusOK || body != "B" {
		t.Fatalf("after a failed reload: %d %q %q, want 200 from B still", code, reason, body)
	}
}

// A reload with a broken rule pack is refused whole: the scanner and the
// policy stay; once the pack is fixed, both change.
func TestReloadBrokenRulePackKeepsAll(t *testing.T) {
	p := liveParams{addr: "127.0.0.1", roots: "upstream-ca.pem"}
	w := newLiveWorld(t, p)
	before := w.s.scanner.Current()
	if code, reason, _ := w.post(t, "api.example.test", liveMarker); code != http.StatusForbidden {
		t.Fatalf("the marker was not blocked at start: %d %q", code, reason)
	}

	mustWriteFile(t, filepath.Join(w.dir, "pack.toml"), "[[rules]\nid = \"broken\n")
	p.extra, p.actions = "new.example.test", "live-test-marker: alert"
	if w.reload(t, p) {
		t.Fatal("a reload with a broken rule pack succeeded")
	}
	if w.s.scanner.Current() != before {
		t.Error("the scanner was replaced by a failed reload")
	}
	if code, reason, _ := w.post(t, "api.example.test", liveMarker); code != http.StatusForbidden {
		t.Errorf("after a failed reload the marker is not blocked: %d %q", code, reason)
	}
	q := rules.Query{Identity: rules.Identity{Tenant: "acme", Class: "agent"}, Host: "new.example.test", Port: w.port, Stage: rules.StageConnect}
	if d := w.s.policy.Decide(q); d.Action != rules.Deny {
		t.Errorf("a host only the failed reload allows: %+v", d)
	}

	mustWriteFile(t, filepath.Join(w.dir, "pack.toml"), livePack)
	if !w.reload(t, p) {
		t.Fatalf("reload with the pack fixed failed: %s", w.log)
	}
	if w.s.scanner.Current() == before {
		t.Error("the scanner was not replaced")
	}
	if code, reason, body := w.post(t, "new.example.test", "hi"); code != http.StatusOK || body != "A" {
		t.Errorf("the reloaded policy does not allow new.example.test: %d %q %q", code, reason, body)
	}
}

// A reload that changes a rule's action changes the verdict, with the
// scanner's key, canaries and phantoms carried over.
func TestReloadAppliesScanActions(t *testing.T) {
	p := liveParams{addr: "127.0.0.1", roots: "upstream-ca.pem"}
	w := newLiveWorld(t, p)
	before := w.s.scanner.Current()
	if code, reason, _ := w.post(t, "api.example.test", liveMarker); code != http.StatusForbidden || reason == "" {
		t.Fatalf("the marker was not blocked at start: %d %q", code, reason)
	}

	p.actions = "live-test-marker: alert"
	if !w.reload(t, p) {
		t.Fatalf("reload failed: %s", w.log)
	}
	if code, reason, body := w.post(t, "api.example.test", liveMarker); code != http.StatusOK || body != "A" {
		t.Fatalf("with the rule's action set to alert: %d %q %q, want 200", code, reason, body)
	}
	after := w.s.scanner.Current()
	if after == before || !bytes.Equal(after.Key, before.Key) || after.Canaries != before.Canaries || after.Phantoms != before.Phantoms {
		t.Error("the reloaded scanner does not carry the key, canaries and phantoms over")
	}
	if strings.Contains(w.log.String(), "apply only after a restart") {
		t.Errorf("a scanning change reported as restart-only: %s", w.log)
	}

	p.actions = ""
	if !w.reload(t, p) {
		t.Fatalf("reload failed: %s", w.log)
	}
	if code, reason, _ := w.post(t, "api.example.test", liveMarker); code != http.StatusForbidden {
		t.Fatalf("with the action removed again: %d %q, want 403", code, reason)
	}
}

// scanning.max_body_bytes and on_oversize apply from the next request on,
// without a restart.
func TestReloadAppliesBodyLimit(t *testing.T) {
	p := liveParams{addr: "127.0.0.1", roots: "upstream-ca.pem"}
	w := newLiveWorld(t, p)
	body := strings.Repeat("x", 4<<10)
	if code, reason, _ := w.post(t, "api.example.test", body); code != http.StatusOK {
		t.Fatalf("4KiB under the default limit: %d %q, want 200", code, reason)
	}
	p.scan = "max_body_bytes: 1KiB"
	if !w.reload(t, p) {
		t.Fatalf("reload failed: %s", w.log)
	}
	if code, reason, _ := w.post(t, "api.example.test", body); code != http.StatusRequestEntityTooLarge || reason != scanner.ReasonOversize {
		t.Fatalf("4KiB over a reloaded limit of 1KiB: %d %q, want 413 %s", code, reason, scanner.ReasonOversize)
	}
	p.scan = "max_body_bytes: 1KiB\n  on_oversize: forward"
	if !w.reload(t, p) {
		t.Fatalf("reload failed: %s", w.log)
	}
	if code, reason, body := w.post(t, "api.example.test", body); code != http.StatusOK || body != "A" {
		t.Fatalf("4KiB over the limit with on_oversize: forward: %d %q %q, want 200", code, reason, body)
	}
	if strings.Contains(w.log.String(), "apply only after a restart") {
		t.Errorf("a body limit change reported as restart-only: %s", w.log)
	}
}

// upstream.deny adds ranges the gateway never dials, from start-up and on
// reload, over a pooled upstream connection too; the built-in ranges stay.
func TestUpstreamDenyApplies(t *testing.T) {
	p := liveParams{addr: "127.0.0.2", roots: "upstream-ca.pem", deny: "127.0.0.2/32"}
	w := newLiveWorld(t, p)
	if code, reason, _ := w.post(t, "api.example.test", "hi"); code != http.StatusForbidden || reason != gateway.ReasonAddressNotAllowed {
		t.Fatalf("denied at start-up: %d %q, want 403 %s", code, reason, gateway.ReasonAddressNotAllowed)
	}
	p.deny = ""
	if !w.reload(t, p) {
		t.Fatalf("reload failed: %s", w.log)
	}
	if code, reason, body := w.post(t, "api.example.test", "hi"); code != http.StatusOK || body != "B" {
		t.Fatalf("deny removed: %d %q %q, want 200 from B", code, reason, body)
	}
	p.deny = "127.0.0.0/30"
	if !w.reload(t, p) {
		t.Fatalf("reload failed: %s", w.log)
	}
	if code, reason, _ := w.post(t, "api.example.test", "hi"); code != http.StatusForbidden || reason != gateway.ReasonAddressNotAllowed {
		t.Fatalf("denied on reload: %d %q, want 403 %s", code, reason, gateway.ReasonAddressNotAllowed)
	}
	if d := w.s.dialer.Load(); d.Deny == nil || len(d.ExtraDeny) != 1 {
		t.Fatalf("the reload lost the dialer's other settings: %+v", d)
	}
}
