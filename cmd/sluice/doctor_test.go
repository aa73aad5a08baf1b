package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/sluice-egress/sluice/config"
	"github.com/sluice-egress/sluice/gateway/guard"
	"github.com/sluice-egress/sluice/internal/testnet"
	"github.com/sluice-egress/sluice/internal/trust"
)

// doctorWorld is a real gateway (Server, as `sluice serve` wires it) on
// loopback with one TLS upstream, and the trust files `ca export` writes.
type doctorWorld struct {
	proxy   string
	env     map[string]string // sluice.env
	dir     string
	upPort  int
	upCA    *testnet.TestCA
	closed  string // a loopback port nothing listens on
	routes  string // a route table with a default route
	openAPI string // the upstream's real address (reachable directly from the test)
	dns     string // the gateway's resolver, for which 127.0.0.1 is acme's sandbox
	openDNS string // a resolver that answers every name
}

const doctorPolicy = `
version: 1
listen:
  proxy: 127.0.0.1:0
  dns: 127.0.0.1:0
dns:
  sources: [{cidr: 127.0.0.1, tenant: acme}]
data_dir: data
upstream:
  extra_roots: [upstream-ca.pem]
  hosts:
    api.example.test: 127.0.0.1
    pass.example.test: 127.0.0.1
    leaky.example.test: 127.0.0.1
tenants:
  acme:
    token_file: acme.token
    classes:
      agent:
        allow:
          - host: api.example.test
            ports: [%[1]d]
          - host: leaky.example.test
            ports: [443, %[1]d]
        passthrough:
          - host: pass.example.test
            ports: [%[1]d]
`

// routeTable: default route via 172.17.0.1, the usual Docker bridge, in the
// host's byte order as the kernel writes it.
var routeTable = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n" +
	"eth0\t00000000\t" + routeHex("172.17.0.1") + "\t0003\t0\t0\t0\t00000000\t0\t0\t0\n" +
	"eth0\t" + routeHex("172.17.0.0") + "\t00000000\t0001\t0\t0\t0\t" + routeHex("255.255.0.0") + "\t0\t0\t0\n"

// routeHex spells a in /proc/net/route's host byte order.
func routeHex(a string) string {
	b := netip.MustParseAddr(a).As4()
	return fmt.Sprintf("%08X", binary.NativeEndian.Uint32(b[:]))
}

func newDoctorWorld(t *testing.T) *doctorWorld {
	t.Helper()
	w := &doctorWorld{dir: t.TempDir()}
	w.upCA = testnet.NewTestCA(t, "upstream")
	srv := &http.Server{
		Handler:   http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) { io.WriteString(rw, "control ok") }),
		TLSConfig: w.upCA.ServerTLS(t, "api.example.test", "pass.example.test", "leaky.example.test"),
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	w.upPort = l.Addr().(*net.TCPAddr).Port
	w.openAPI = l.Addr().String()
	go srv.ServeTLS(l, "", "")
	t.Cleanup(func() { srv.Close() })

	cl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	w.closed = cl.Addr().String()
	cl.Close()

	if p := w.upCA.WritePEM(t, w.dir); filepath.Base(p) != "upstream-ca.pem" {
		t.Fatalf("upstream CA written to %s", p)
	}
	mustWriteFile(t, filepath.Join(w.dir, "acme.token"), "doctor-test-token-0123456789\n")
	cfgPath := filepath.Join(w.dir, "sluice.yaml")
	mustWriteFile(t, cfgPath, fmt.Sprintf(doctorPolicy, w.upPort))
	w.routes = filepath.Join(w.dir, "route")
	mustWriteFile(t, w.routes, routeTable)

	cfg, err := config.Open(cfgPath, "")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Config: cfg, Stdout: io.Discard, Logger: slog.New(slog.DiscardHandler), DrainTimeout: time.Second}
	if err := s.Open(); err != nil {
		t.Fatal(err)
	}
	// The upstream lives on loopback: take loopback out of the guard's deny
	// ranges (as gateway/world_test.go does). Everything else stays denied.
	s.gw.Dialer = &guard.Dialer{Hosts: s.engine.UpstreamHosts(), Deny: withoutLoopback(guard.DefaultDeny()),
		Self: func() []netip.Addr { return nil }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	w.proxy = s.ProxyAddr()
	w.dns = s.DNSAddr()
	w.openDNS = startOpenResolver(t)

	_, lines, _, err := trust.Export(cfg, s.cas, "acme", filepath.Join(w.dir, "trust"), w.proxy, "")
	if err != nil {
		t.Fatal(err)
	}
	w.env = map[string]string{}
	for _, l := range lines {
		k, v, _ := strings.Cut(l, "=")
		w.env[k] = v
	}
	return w
}

// startOpenResolver serves a resolver that answers every A query with 192.0.2.1,
// as a resolver that forwards would.
func startOpenResolver(t *testing.T) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		rr, _ := dns.NewRR(r.Question[0].Name + " 60 IN A 192.0.2.1")
		m.Answer = append(m.Answer, rr)
		w.WriteMsg(m)
	})}
	go srv.ActivateAndServe()
	t.Cleanup(func() { srv.Shutdown() })
	return pc.LocalAddr().String()
}

func withoutLoopback(ps []netip.Prefix) []netip.Prefix {
	var out []netip.Prefix
	for _, p := range ps {
		if p.Contains(netip.MustParseAddr("127.0.0.1")) || p.Contains(netip.IPv6Loopback()) {
			continue
		}
		out = append(out, p)
	}
	return out
}

func mustWriteFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestDoctor(t *testing.T) {
	w := newDoctorWorld(t)
	control := fmt.Sprintf("https://api.example.test:%d/", w.upPort)
	// A bundle that trusts the upstream CA and not the tenant CA.
	upOnly := filepath.Join(w.dir, "upstream-ca.pem")

	tests := []struct {
		name     string
		env      map[string]string // overrides of sluice.env; "" deletes
		args     []string
		wantErr  bool
		wantPass []string // substrings of PASS lines
		wantFail []string // substrings of FAIL lines
		// wantInconc are substrings of INCONCLUSIVE lines.
		wantInconc []string
	}{
		{
			name: "enforced",
			args: []string{"--control", control, "--direct", w.closed},
			wantPass: []string{"proxy", "allowed api.example.test", "tenant CA trusted", "refused: denied host sluice-doctor-denied.invalid:443",
				"refused: loopback 127.0.0.1:443", "refused: metadata 169.254.169.254:443", "refused: private address 10.0.0.1:443",
				"refused: bridge gateway 172.17.0.1:443", "refused: metadata over plain http", "no direct route " + w.closed,
				"no direct route 172.17.0.1:443", "resolver is Sluice " + w.dns, "no answer for a denied name " + w.dns,
				"no direct route 127.0.0.3:443", "no direct route 127.0.0.3:80", "no DNS to 127.0.0.3:53/udp", "no QUIC to 127.0.0.3:443/udp"},
		},
		{
			name:     "the resolver is not Sluice",
			args:     []string{"--control", control, "--resolver", "OPEN"},
			wantErr:  true,
			wantFail: []string{"resolver is Sluice", "no answer for a denied name"},
		},
		{
			name:     "a second resolver answers denied names",
			args:     []string{"--control", control, "--resolver", "SLUICE", "--resolver", "OPEN"},
			wantErr:  true,
			wantPass: []string{"resolver is Sluice", "no answer for a denied name " + w.dns},
			wantFail: []string{"no answer for a denied name " + w.openDNS},
		},
		{
			// Not resolving is no proof when the resolver is not Sluice: the name's
			// address was never tried.
			name:       "a name that does not resolve is inconclusive",
			args:       []string{"--control", control, "--resolver", "OPEN", "--direct", "nowhere.invalid:443"},
			wantErr:    true,
			wantInconc: []string{"no direct route nowhere.invalid:443"},
		},
		{
			name:     "a direct way out",
			args:     []string{"--control", control, "--direct", w.openAPI},
			wantErr:  true,
			wantPass: []string{"allowed api.example.test"},
			wantFail: []string{"no direct route " + w.openAPI},
		},
		{
			name:     "the store does not trust the tenant CA",
			env:      map[string]string{"SSL_CERT_FILE": upOnly},
			args:     []string{"--control", control},
			wantErr:  true,
			wantFail: []string{"allowed api.example.test", "tenant CA trusted"},
		},
		{
			name:     "control tunnelled blind is not the tenant CA",
			env:      map[string]string{"SSL_CERT_FILE": upOnly},
			args:     []string{"--control", fmt.Sprintf("https://pass.example.test:%d/", w.upPort)},
			wantErr:  true,
			wantPass: []string{"allowed pass.example.test"},
			wantFail: []string{"tenant CA trusted"},
		},
		{
			name:     "the gateway lets the denied host through",
			args:     []string{"--control", control, "--denied", "leaky.example.test"},
			wantErr:  true,
			wantFail: []string{"refused: denied host leaky.example.test:443"},
		},
		{
			name:     "control refused by the policy",
			args:     []string{"--control", "https://nope.example.test/"},
			wantErr:  true,
			wantFail: []string{"refused by the gateway: 403 host-not-allowed (allow the host"},
		},
		{
			name:     "wrong credentials",
			env:      map[string]string{"HTTPS_PROXY": "http://acme:wrong@" + w.proxy},
			args:     []string{"--control", control},
			wantErr:  true,
			wantFail: []string{"allowed api.example.test", "refused: loopback", "refused: metadata"},
		},
		{
			name:     "no proxy",
			env:      map[string]string{"HTTPS_PROXY": "", "https_proxy": "", "HTTP_PROXY": "", "http_proxy": ""},
			args:     []string{"--control", control},
			wantErr:  true,
			wantFail: []string{"proxy"},
		},
		{
			name:     "no gateway",
			args:     []string{"--proxy", "http://acme:x@" + w.closed, "--control", control},
			wantErr:  true,
			wantFail: []string{"allowed api.example.test", "refused: denied host"},
		},
		{
			name:     "no control URL",
			env:      map[string]string{"SLUICE_DOCTOR_CONTROL": ""},
			wantErr:  true,
			wantFail: []string{"allowed control host", "tenant CA trusted"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{}
			for k, v := range w.env {
				env[k] = v
			}
			for k, v := range tc.env {
				env[k] = v
			}
			var out bytes.Buffer
			args := []string{"--routes", w.routes, "--timeout", "3s", "--outside", "127.0.0.3", "--metadata", "127.0.0.3"}
			if !slices.Contains(tc.args, "--resolver") {
				args = append(args, "--resolver", w.dns)
			}
			for _, a := range tc.args {
				switch a {
				case "SLUICE":
					a = w.dns
				case "OPEN":
					a = w.openDNS
				}
				args = append(args, a)
			}
			err := runDoctor(context.Background(), args, func(k string) string { return env[k] }, &out, io.Discard)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v\n%s", err, tc.wantErr, out.String())
			}
			lines := strings.Split(out.String(), "\n")
			for _, want := range tc.wantPass {
				if !hasLine(lines, "PASS", want) {
					t.Errorf("no PASS line with %q\n%s", want, out.String())
				}
			}
			for _, want := range tc.wantFail {
				if !hasLine(lines, "FAIL", want) {
					t.Errorf("no FAIL line with %q\n%s", want, out.String())
				}
			}
			for _, want := range tc.wantInconc {
				if !hasLine(lines, "INCONCLUSIVE", want) {
					t.Errorf("no INCONCLUSIVE line with %q\n%s", want, out.String())
				}
			}
			if !tc.wantErr && (strings.Contains(out.String(), "FAIL") || strings.Contains(out.String(), "INCONCLUSIVE")) {
				t.Errorf("a FAIL or INCONCLUSIVE line in a passing report\n%s", out.String())
			}
			if strings.Contains(out.String(), "doctor-test-token") || strings.Contains(out.String(), "wrong") {
				t.Errorf("the report shows the proxy token\n%s", out.String())
			}
		})
	}
}

func hasLine(lines []string, verdict, sub string) bool {
	for _, l := range lines {
		if strings.HasPrefix(l, verdict) && strings.Contains(l, sub) {
			return true
		}
	}
	return false
}

func TestDoctorUsage(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{"control not https", []string{"--control", "http://api.example.test/"}},
		{"stray argument", []string{"extra"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			code := Run(context.Background(), append([]string{"doctor"}, tc.args...), &out, &out)
			if code != 2 {
				t.Fatalf("exit %d, want 2\n%s", code, out.String())
			}
		})
	}
}

func TestHealthcheck(t *testing.T) {
	w := newDoctorWorld(t)
	notSluice := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			rw.WriteHeader(http.StatusServiceUnavailable)
		})}
		go srv.Serve(l)
		t.Cleanup(func() { srv.Close() })
		return l.Addr().String()
	}()
	tests := []struct {
		name    string
		args    []string
		wantErr bool
	}{
		{"gateway, no admin listener yet", []string{"--proxy", w.proxy, "--admin", w.closed}, false},
		{"gateway, admin skipped", []string{"--proxy", w.proxy, "--admin", ""}, false},
		{"nothing listens", []string{"--proxy", w.closed, "--admin", ""}, true},
		{"not a proxy", []string{"--proxy", notSluice, "--admin", ""}, true},
		{"admin unhealthy", []string{"--proxy", w.proxy, "--admin", notSluice}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := runHealthcheck(context.Background(), append(tc.args, "--timeout", "2s"), io.Discard, io.Discard)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
		})
	}
}
