package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/sluice-egress/sluice/config"
	"github.com/sluice-egress/sluice/rules"
	"github.com/sluice-egress/sluice/runs"
	"github.com/sluice-egress/sluice/store"
)

// sandboxConfig: the resolver and the transparent listeners on loopback, 127.0.0.1
// being acme's sandbox network; %s is acme's allowed host.
const sandboxConfig = `version: 1
listen:
  proxy: 127.0.0.1:0
  admin: 127.0.0.1:0
  dns: 127.0.0.1:0
  transparent_tls: 127.0.0.1:0
  transparent_http: 127.0.0.1:0
data_dir: data
dns:
  mode: transparent
  names: [sluice.internal, gw.sluice.test]
  addrs: [192.0.2.53]
  sources:
    - {cidr: 127.0.0.1, tenant: acme}
tenants:
  acme:
    token_file: acme.token
    classes:
      agent:
        allow:
          - host: %s
`

func startSandboxServer(t *testing.T, allowed string) (*Server, string) {
	t.Helper()
	dir := t.TempDir()
	tok, _ := rules.NewToken()
	mustWriteFile(t, filepath.Join(dir, "acme.token"), tok+"\n")
	path := filepath.Join(dir, "sluice.yaml")
	mustWriteFile(t, path, fmt.Sprintf(sandboxConfig, allowed))
	cfg, err := config.Open(path, "")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Config: cfg, Stdout: io.Discard, Logger: slog.New(slog.DiscardHandler), DrainTimeout: time.Second}
	if err := s.Open(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return s, dir
}

func query(t *testing.T, addr, name string, qtype uint16) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	c := &dns.Client{Timeout: 5 * time.Second}
	r, _, err := c.Exchange(m, addr)
	if err != nil {
		t.Fatalf("query %s: %v", name, err)
	}
	return r
}

func answerA(r *dns.Msg) string {
	for _, rr := range r.Answer {
		if a, ok := rr.(*dns.A); ok {
			return a.A.String()
		}
	}
	return ""
}

func TestServeSandboxResolver(t *testing.T) {
	s, dir := startSandboxServer(t, "api.example.test")
	addr := s.DNSAddr()

	for _, name := range []string{"sluice.internal", "gw.sluice.test", "api.example.test"} {
		if r := query(t, addr, name, dns.TypeA); r.Rcode != dns.RcodeSuccess || answerA(r) != "192.0.2.53" {
			t.Errorf("%s: %s %v, want the gateway's address", name, dns.RcodeToString[r.Rcode], r.Answer)
		}
	}
	// A token as DNS spells it, one case and no digit: no label check sees
	// data in it, the gateway's reading of a refused host does.
	dnsToken := "ghp-" + strings.Repeat("abcdefghijklmnopqrstuvwxyz", 2)[:36]
	for _, name := range []string{"evil.example.test", "4a6f686e20446f65206b6e6f77732e2e2e.api.example.test", dnsToken + ".evil.example.test"} {
		if r := query(t, addr, name, dns.TypeA); r.Rcode != dns.RcodeRefused || len(r.Answer) != 0 {
			t.Errorf("%s: %s %v, want REFUSED", name, dns.RcodeToString[r.Rcode], r.Answer)
		}
	}
	// Over TCP too.
	m := new(dns.Msg)
	m.SetQuestion("evil.example.test.", dns.TypeA)
	if r, _, err := (&dns.Client{Net: "tcp", Timeout: 5 * time.Second}).Exchange(m, addr); err != nil || r.Rcode != dns.RcodeRefused {
		t.Errorf("tcp: %v %v", r, err)
	}

	// Refusals are incidents of kind dns, with the data-bearing label redacted.
	var got []string
	deadline := time.Now().Add(5 * time.Second)
	for len(got) < 3 && time.Now().Before(deadline) {
		page, err := s.ops.Store.ListIncidents(context.Background(), store.IncidentFilter{Kind: "dns"})
		if err != nil {
			t.Fatal(err)
		}
		got = got[:0]
		for _, in := range page.Incidents {
			got = append(got, in.Host+" "+in.Reason)
		}
		time.Sleep(20 * time.Millisecond)
	}
	joined := strings.Join(got, "\n")
	if !strings.Contains(joined, "evil.example.test host-not-allowed") || !strings.Contains(joined, "{redacted}.api.example.test data-in-name") {
		t.Errorf("dns incidents:\n%s", joined)
	}
	if strings.Contains(joined, "4a6f686e") || strings.Contains(joined, dnsToken) {
		t.Errorf("an incident keeps the data of a name:\n%s", joined)
	}

	// The live engine decides after a reload.
	mustWriteFile(t, filepath.Join(dir, "sluice.yaml"), fmt.Sprintf(sandboxConfig, "new.example.test"))
	if !s.watch.Now("test") {
		t.Fatal("reload failed")
	}
	if r := query(t, addr, "api.example.test", dns.TypeA); r.Rcode != dns.RcodeRefused {
		t.Errorf("a host no longer allowed still resolves: %v", r.Answer)
	}
	if r := query(t, addr, "new.example.test", dns.TypeA); answerA(r) != "192.0.2.53" {
		t.Errorf("a newly allowed host: %s", dns.RcodeToString[r.Rcode])
	}
}

// The transparent listeners serve the sources table's sandboxes: a denied name is
// refused by the gateway itself, over TLS signed by the tenant CA.
func TestServeTransparent(t *testing.T) {
	s, _ := startSandboxServer(t, "api.example.test")
	a, err := s.cas.Authority("acme")
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(a.Certificate())
	c, err := tls.Dial("tcp", s.sandbox.TLSAddr(), &tls.Config{ServerName: "evil.example.test", RootCAs: roots})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: evil.example.test\r\n\r\n")
	b, _ := io.ReadAll(c)
	if !strings.Contains(string(b), "403 Forbidden") || !strings.Contains(string(b), "Sluice-Reason: host-not-allowed") {
		t.Fatalf("got %q", b)
	}
	resp, err := http.Get("http://" + s.sandbox.HTTPAddr() + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// The Host is the listener's own address: an IP literal no entry allows.
	if resp.StatusCode != 403 || resp.Header.Get("Sluice-Reason") == "" {
		t.Fatalf("plain: %d %q", resp.StatusCode, resp.Header.Get("Sluice-Reason"))
	}
}

// A run's sandbox address is the run's while it lives.
func TestServeRunSandbox(t *testing.T) {
	s, _ := startSandboxServer(t, "api.example.test")
	ctx := context.Background()
	p := netip.MustParsePrefix("10.9.0.7/32")
	c, err := s.runs.CreateRun(ctx, runs.Request{Tenant: "acme", Class: "agent", TTL: time.Hour, Sandbox: p})
	if err != nil {
		t.Fatal(err)
	}
	if id, ok := s.sandbox.Table.Lookup(p.Addr()); !ok || id.Run != c.Run.ID {
		t.Fatalf("the run's address: %v %v", id, ok)
	}
	if _, err := s.runs.CreateRun(ctx, runs.Request{Tenant: "acme", Class: "agent", TTL: time.Hour, Sandbox: p}); !errors.Is(err, runs.ErrInvalid) {
		t.Fatalf("a second run on the same address: %v", err)
	}
	if _, err := s.runs.EndRun(ctx, c.Run.ID, "test"); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.sandbox.Table.Lookup(p.Addr()); ok {
		t.Fatal("an ended run's address is still known")
	}
}
