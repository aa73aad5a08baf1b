package e2e

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/sluice-egress/sluice/internal/testnet"
)

// dnsAddr is where the test's authoritative DNS server listens, in the internet namespace.
var dnsAddr = netip.MustParseAddr("198.51.100.53")

// closeAddr serves HTTP/1.1 only and closes every connection after one response, so that
// the gateway cannot pool it.
var closeAddr = netip.MustParseAddr("198.51.100.14")

// dnsPolicy has no upstream.hosts: every name is resolved by the DNS server the gateway's
// resolv.conf names.
const dnsPolicy = `
version: 1
listen:
  proxy: 192.0.2.1:3128
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
          - host: nowhere.example.test
          - host: rebind-mitm.example.test
          - host: rebind-pool.example.test
          - host: mixed.example.test
          - host: metadata.example.test
        passthrough:
          - host: rebind.example.test
          - host: mixed-pass.example.test
          - host: metadata-pass.example.test
`

// dnsEnv is a gateway whose only resolver is a DNS server the test controls.
type dnsEnv struct {
	*fixture
	dns      *dnsServer
	roots    *x509.CertPool // acme's exported CA
	upstream *testnet.Upstream
	closing  *atomic.Int64 // requests served by the upstream on closeAddr
	// Real listeners where the forbidden answers point, reachable from the gateway's
	// namespace, so that only the gateway's own check keeps it away.
	loop, private, metadata *countingListener
}

func startDNSEnv(t *testing.T) *dnsEnv {
	e := &dnsEnv{fixture: newFixture(t, dnsPolicy, "acme")}
	w := e.w
	w.AddUpstreamAddr(t, dnsAddr)
	e.dns = startDNS(t, w.Internet, dnsAddr)
	useResolver(t, w.Gateway, dnsAddr)

	names := []string{"www.example.test", "rebind.example.test", "rebind-pool.example.test", "mixed.example.test", "mixed-pass.example.test"}
	e.upstream = w.ServeUpstream(t, testnet.HostPort(apiAddr, 443), e.upCA.ServerTLS(t, names...), nil)
	e.closing = serveClosing(t, w, testnet.HostPort(closeAddr, 443), e.upCA.ServerTLS(t, "rebind-mitm.example.test"))
	w.AddUpstreamAddr(t, privateAddr)
	w.AddUpstreamAddr(t, metadataAddr)
	e.loop = listenCounting(t, w.Gateway, "127.0.0.1:443")
	e.private = listenCounting(t, w.Internet, testnet.HostPort(privateAddr, 443))
	e.metadata = listenCounting(t, w.Internet, testnet.HostPort(metadataAddr, 443))
	e.serve(t, "2s")
	e.roots = trustRoots(t, e.exportTrust(t, "acme"))
	return e
}

// inspectGet opens a new inspected tunnel to host:443 and sends one GET on it.
func (e *dnsEnv) inspectGet(t *testing.T, host, path string) (int, string) {
	t.Helper()
	code, reason, c := e.connect443(t, e.token, host)
	if code != 200 {
		t.Fatalf("CONNECT %s: %d %s (an inspected tunnel dials nothing before its first request)", host, code, reason)
	}
	code, reason, err := startTLS(t, c, e.roots, host).get(host, path)
	if err != nil {
		t.Fatalf("GET https://%s%s: %v", host, path, err)
	}
	return code, reason
}

// hostsSeen counts the upstream's requests for host.
func (e *dnsEnv) hostsSeen(host string) int {
	n := 0
	for _, r := range e.upstream.Seen() {
		if r.Host == host {
			n++
		}
	}
	return n
}

// serveClosing serves "hello" over HTTPS/1.1 on addr in the internet namespace, closing
// each connection after its response; it returns the count of requests served.
func serveClosing(t *testing.T, w *testnet.World, addr string, cfg *tls.Config) *atomic.Int64 {
	t.Helper()
	w.AddUpstreamAddr(t, netip.MustParseAddrPort(addr).Addr())
	ln, err := w.Internet.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	cfg = cfg.Clone()
	cfg.NextProtos = []string{"http/1.1"}
	var n atomic.Int64
	srv := &http.Server{
		Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			n.Add(1)
			rw.Header().Set("Connection", "close")
			io.WriteString(rw, "hello from "+r.Host)
		}),
		ReadHeaderTimeout: 10 * time.Second,
		TLSNextProto:      map[string]func(*http.Server, *tls.Conn, http.Handler){}, // no h2
	}
	go srv.Serve(tls.NewListener(ln, cfg))
	t.Cleanup(func() { srv.Close() })
	return &n
}

func (e *dnsEnv) checkForbiddenUntouched(t *testing.T) {
	t.Helper()
	for _, l := range []*countingListener{e.loop, e.private, e.metadata} {
		if n := l.accepted.Load(); n != 0 {
			t.Errorf("%s: the gateway connected %d times to a forbidden address", l.addr, n)
		}
	}
}

func TestDNS(t *testing.T) {
	e := startDNSEnv(t)
	loopback := netip.MustParseAddr("127.0.0.1")

	t.Run("a name only the DNS server knows is reached", func(t *testing.T) {
		e.dns.static("www.example.test", apiAddr)
		code, reason := e.inspectGet(t, "www.example.test", "/x")
		if code != 200 {
			t.Fatalf("GET: %d %q", code, reason)
		}
		if n := e.hostsSeen("www.example.test"); n != 1 {
			t.Fatalf("the upstream saw %d requests, want 1", n)
		}
		if n := e.dns.count("www.example.test", dnsmessage.TypeA); n != 1 {
			t.Fatalf("the DNS server got %d A queries, want 1", n)
		}
	})

	t.Run("a name the DNS server does not know is unreachable", func(t *testing.T) {
		code, reason := e.inspectGet(t, "nowhere.example.test", "/")
		if code == 200 || reason != "upstream-unreachable" {
			t.Fatalf("GET: %d %q, want upstream-unreachable", code, reason)
		}
		if e.dns.count("nowhere.example.test", dnsmessage.TypeA) == 0 {
			t.Fatal("the gateway did not ask the DNS server")
		}
	})

	t.Run("rebinding: each tunnel resolves once and never reaches loopback", func(t *testing.T) {
		defer e.checkForbiddenUntouched(t)
		const name = "rebind.example.test" // passthrough: every CONNECT dials
		e.dns.sequence(name, []netip.Addr{apiAddr}, []netip.Addr{loopback})
		for i := range 4 {
			code, reason, c := e.connect443(t, e.token, name)
			if i == 0 {
				// First answer: the real upstream, reached on the one address resolved.
				if code != 200 {
					t.Fatalf("CONNECT #1: %d %q", code, reason)
				}
				if got, _, err := startTLS(t, c, e.upCA.Pool(), name).get(name, "/"); err != nil || got != 200 {
					t.Fatalf("GET through tunnel #1: %d %v", got, err)
				}
			} else if code != 403 || reason != "address-not-allowed" {
				t.Fatalf("CONNECT #%d after the name rebound to 127.0.0.1: %d %q", i+1, code, reason)
			}
			for _, typ := range []dnsmessage.Type{dnsmessage.TypeA, dnsmessage.TypeAAAA} {
				if n := e.dns.count(name, typ); n != i+1 {
					t.Fatalf("after %d tunnels the DNS server got %d %v queries, want %d (one resolution per tunnel)", i+1, n, typ, i+1)
				}
			}
		}
		if n := e.hostsSeen(name); n != 1 {
			t.Errorf("the upstream saw %d requests, want 1", n)
		}
	})

	t.Run("rebinding: each inspected request dials once and never reaches loopback", func(t *testing.T) {
		defer e.checkForbiddenUntouched(t)
		const name = "rebind-mitm.example.test" // its upstream closes every connection: each request dials
		e.dns.sequence(name, []netip.Addr{closeAddr}, []netip.Addr{loopback})
		for i := range 4 {
			code, reason := e.inspectGet(t, name, "/")
			if i == 0 && code != 200 {
				t.Fatalf("request #1, resolved to the upstream: %d %q", code, reason)
			}
			if i > 0 && (code != 403 || reason != "address-not-allowed") {
				t.Fatalf("request #%d after the name rebound to 127.0.0.1: %d %q", i+1, code, reason)
			}
			if n := e.dns.count(name, dnsmessage.TypeA); n != i+1 {
				t.Fatalf("after %d requests the DNS server got %d A queries, want %d (one resolution per dial)", i+1, n, i+1)
			}
		}
		if n := e.closing.Load(); n != 1 {
			t.Errorf("the upstream saw %d requests, want 1", n)
		}
	})

	t.Run("rebinding: pooled inspected requests reach the upstream or are refused", func(t *testing.T) {
		defer e.checkForbiddenUntouched(t)
		const name = "rebind-pool.example.test" // HTTP/2 upstream: later requests may reuse the connection
		e.dns.sequence(name, []netip.Addr{apiAddr}, []netip.Addr{loopback})
		refused := 0
		for i := range 4 {
			code, reason := e.inspectGet(t, name, "/")
			switch {
			case i == 0 && code != 200:
				t.Fatalf("request #1, resolved to the upstream: %d %q", code, reason)
			case code == 200:
			case code == 403 && reason == "address-not-allowed":
				refused++
			default:
				t.Fatalf("request #%d: %d %q", i+1, code, reason)
			}
		}
		// Every dial resolves once, and every resolution after the first is refused.
		if n := e.dns.count(name, dnsmessage.TypeA); n != refused+1 {
			t.Errorf("%d A queries for %d refused requests: not one resolution per dial", n, refused)
		}
		if n := e.hostsSeen(name); n != 4-refused {
			t.Errorf("the upstream saw %d requests, want %d", n, 4-refused)
		}
	})

	t.Run("forbidden answers are refused", func(t *testing.T) {
		defer e.checkForbiddenUntouched(t)
		e.dns.static("mixed.example.test", apiAddr, privateAddr)
		e.dns.static("mixed-pass.example.test", apiAddr, privateAddr)
		e.dns.static("metadata.example.test", metadataAddr)
		e.dns.static("metadata-pass.example.test", metadataAddr)
		tests := []struct {
			name        string
			passthrough bool
		}{
			{"mixed.example.test", false},
			{"mixed-pass.example.test", true},
			{"metadata.example.test", false},
			{"metadata-pass.example.test", true},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				var code int
				var reason string
				if tc.passthrough {
					code, reason, _ = e.connect443(t, e.token, tc.name)
				} else {
					code, reason = e.inspectGet(t, tc.name, "/")
				}
				if code != 403 || reason != "address-not-allowed" {
					t.Fatalf("%d %q, want 403 address-not-allowed", code, reason)
				}
				if e.dns.count(tc.name, dnsmessage.TypeA) == 0 {
					t.Fatal("the gateway did not ask the DNS server")
				}
				if n := e.hostsSeen(tc.name); n != 0 {
					t.Fatalf("the upstream saw %d requests for a refused name", n)
				}
			})
		}
	})
}
