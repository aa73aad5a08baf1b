package e2e

import (
	"context"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/sluice-egress/sluice/internal/testnet"
)

// transparentConfig: one gateway for explicit and transparent sandboxes. Its resolver is
// the sandbox's only one; its own lookups go to the test's DNS server.
const transparentConfig = `
version: 1
listen:
  proxy: 192.0.2.1:3128
  admin: 127.0.0.1:8080
  dns: 192.0.2.1:53
  transparent_http: 192.0.2.1:8081
  transparent_tls: 192.0.2.1:8443
dns:
  mode: transparent
data_dir: data
upstream:
  extra_roots: [upstream-ca.pem]
tenants:
  acme:
    token_file: acme.token
    classes:
      agent:
        allow:
          - host: www.example.test
          - host: plain.example.test
            ports: [80]
`

// sandboxRedirect is what an init container installs in a transparent sandbox's
// namespace: TCP 443 and 80 to the gateway's transparent listeners, DNS and the proxy
// to the gateway, everything else dropped and counted.
const sandboxRedirect = `
table inet sluice_redirect {
	counter dropped_udp {}
	counter dropped_tcp {}
	counter dropped_other {}
	chain nat_out {
		type nat hook output priority -100; policy accept;
		meta nfproto ipv4 tcp dport 443 dnat ip to 192.0.2.1:8443
		meta nfproto ipv4 tcp dport 80 dnat ip to 192.0.2.1:8081
	}
	chain filter_out {
		type filter hook output priority 0; policy drop;
		oif "lo" accept
		ct state established,related accept
		ip daddr 192.0.2.1 tcp dport { 53, 3128, 8081, 8443 } accept
		ip daddr 192.0.2.1 udp dport 53 accept
		meta l4proto udp counter name dropped_udp drop
		meta l4proto tcp counter name dropped_tcp drop
		counter name dropped_other drop
	}
}
`

// Addresses of the transparent test's internet.
var (
	tpWWWAddr   = netip.MustParseAddr("198.51.100.40") // www.example.test (TLS) and plain.example.test (80)
	tpOtherAddr = netip.MustParseAddr("198.51.100.41") // listens on UDP 443 and TCP 8080: nothing may reach it
)

const gatewayDNS = "192.0.2.1:53"

type transparentEnv struct {
	*fixture
	dns      *dnsServer
	trust    string         // the exported trust directory
	roots    *x509.CertPool // acme's CA
	www      *testnet.Upstream
	plain    *testnet.Upstream
	udpSeen  *atomic.Int64 // datagrams tpOtherAddr:443 received
	tcpOther *countingListener
	runID    string
	admin    *http.Client
}

func startTransparentEnv(t *testing.T) *transparentEnv {
	e := &transparentEnv{fixture: newFixture(t, transparentConfig, "acme")}
	w := e.w
	w.AddUpstreamAddr(t, dnsAddr)
	e.dns = startDNS(t, w.Internet, dnsAddr)
	e.dns.static("www.example.test", tpWWWAddr)
	e.dns.static("plain.example.test", tpWWWAddr)
	useResolver(t, w.Gateway, dnsAddr)
	e.www = w.ServeUpstream(t, testnet.HostPort(tpWWWAddr, 443), e.upCA.ServerTLS(t, "www.example.test"), nil)
	e.plain = w.ServeUpstream(t, testnet.HostPort(tpWWWAddr, 80), nil, nil)
	w.AddUpstreamAddr(t, tpOtherAddr)
	e.tcpOther = listenCounting(t, w.Internet, testnet.HostPort(tpOtherAddr, 8080))
	e.udpSeen = listenUDPCounting(t, w.Internet, testnet.HostPort(tpOtherAddr, 443))

	// The sandbox: Sluice as its only resolver, its TCP 80/443 redirected.
	useResolver(t, w.Sandbox, netip.MustParseAddr("192.0.2.1"))
	rules := filepath.Join(e.dir, "redirect.nft")
	mustWrite(t, rules, sandboxRedirect, 0o644)
	if _, err := w.Sandbox.Run(t, "nft", "-f", rules); err != nil {
		t.Fatalf("redirect rules: %v", err)
	}

	e.serve(t, "1s")
	e.trust = e.exportTrust(t, "acme")
	e.roots = trustRoots(t, e.trust)
	e.admin = w.Gateway.HTTPClient(nil, nil)
	return e
}

// listenUDPCounting counts the datagrams that reach addr in ns.
func listenUDPCounting(t *testing.T, ns *testnet.NS, addr string) *atomic.Int64 {
	t.Helper()
	var pc net.PacketConn
	if err := ns.Do(func() error {
		var err error
		pc, err = net.ListenPacket("udp", addr)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	go func() {
		buf := make([]byte, 2048)
		for {
			if _, _, err := pc.ReadFrom(buf); err != nil {
				return
			}
			n.Add(1)
		}
	}()
	t.Cleanup(func() { pc.Close() })
	return &n
}

// query asks server (ip:port) from the sandbox; nil when nothing answered.
func (e *transparentEnv) query(t *testing.T, server, name string) *dns.Msg {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	c, err := e.w.Sandbox.DialContext(ctx, "udp", server)
	if err != nil {
		return nil
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), dns.TypeA)
	dc := &dns.Conn{Conn: c}
	if err := dc.WriteMsg(m); err != nil {
		return nil
	}
	r, err := dc.ReadMsg()
	if err != nil {
		return nil
	}
	return r
}

// lookup resolves name through the sandbox's resolver, as a client without proxy
// settings does.
func (e *transparentEnv) lookup(ctx context.Context, name string) ([]netip.Addr, error) {
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return e.w.Sandbox.DialContext(ctx, network, gatewayDNS)
	}}
	return r.LookupNetIP(ctx, "ip4", name)
}

// directClient is a Go client in the sandbox without proxy settings: it resolves with
// the sandbox's resolver and dials the answer, which the redirect sends to the gateway.
func (e *transparentEnv) directClient(t *testing.T) *http.Client {
	c := e.w.Sandbox.HTTPClient(nil, e.roots)
	tr := c.Transport.(*http.Transport)
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		ips, err := e.lookup(ctx, host)
		if err != nil {
			return nil, err
		}
		return e.w.Sandbox.DialContext(ctx, network, net.JoinHostPort(ips[0].String(), port))
	}
	c.Timeout = 20 * time.Second
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// counter reads one of the redirect rules' counters: packets.
func (e *transparentEnv) counter(t *testing.T, name string) int {
	t.Helper()
	out, err := e.w.Sandbox.Run(t, "nft", "list", "counter", "inet", "sluice_redirect", name)
	if err != nil {
		t.Fatal(err)
	}
	var packets int
	if i := strings.Index(out, "packets "); i >= 0 {
		fmt.Sscan(out[i+len("packets "):], &packets)
	}
	return packets
}
