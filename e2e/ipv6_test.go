package e2e

import (
	"context"
	"crypto/x509"
	"net/netip"
	"testing"
	"time"

	"github.com/sluice-egress/sluice/internal/testnet"
)

// IPv6 addresses of the IPv6 world: the allowed upstream in the documentation range, and
// forbidden ones that exist in a namespace the gateway can reach only to show that the
// gateway never dials them.
var (
	v6UpstreamAddr = netip.MustParseAddr("2001:db8:2::10")
	v6MetadataAddr = netip.MustParseAddr("fd00:ec2::254")   // AWS IMDS over IPv6
	v6ULAAddr      = netip.MustParseAddr("fd12:3456::10")   // fc00::/7
	v6NAT64Loop    = netip.MustParseAddr("64:ff9b::7f00:1") // 127.0.0.1 behind the NAT64 prefix
)

// ipv6Policy maps names to IPv6 literals in upstream.hosts. mapped.example.test is written as
// an IPv4-mapped IPv6 address of loopback: the config unmaps it to 127.0.0.1, which the
// guard refuses like any other spelling of loopback.
const ipv6Policy = `
version: 1
listen:
  proxy: 192.0.2.1:3128
data_dir: data
upstream:
  extra_roots: [upstream-ca.pem]
  hosts:
    v6.example.test: "2001:db8:2::10"
    loop6.example.test: "::1"
    loop6-pass.example.test: "[::1]"
    metadata6.example.test: "fd00:ec2::254"
    metadata6-pass.example.test: "fd00:ec2::254"
    ula.example.test: "fd12:3456::10"
    mapped.example.test: "::ffff:127.0.0.1"
    nat64.example.test: "64:ff9b::7f00:1"
    gateway6.example.test: "2001:db8:1::1"
    gateway6-in.example.test: "2001:db8:2::1"
tenants:
  acme:
    token_file: acme.token
    classes:
      agent:
        allow:
          - host: v6.example.test
          - host: loop6.example.test
          - host: metadata6.example.test
          - host: ula.example.test
          - host: mapped.example.test
          - host: nat64.example.test
          - host: gateway6.example.test
          - host: gateway6-in.example.test
        passthrough:
          - host: loop6-pass.example.test
          - host: metadata6-pass.example.test
`

// v6Forbidden is a real listener on an address the gateway must never dial, with the
// connections it had accepted before the gateway started (the reachability probe).
type v6Forbidden struct {
	l    *countingListener
	base int64
}

// listenForbidden listens on addr:443 in ns and shows that the gateway's namespace reaches
// it, so that only the gateway's own check can keep the gateway away.
func listenForbidden(t *testing.T, w *testnet.World, ns *testnet.NS, addr netip.Addr) *v6Forbidden {
	t.Helper()
	l := listenCounting(t, ns, testnet.HostPort(addr, 443))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := w.Gateway.DialContext(ctx, "tcp", l.addr)
	if err != nil {
		t.Fatalf("the gateway namespace cannot reach %s, so a refusal would prove nothing: %v", l.addr, err)
	}
	c.Close()
	for deadline := time.Now().Add(5 * time.Second); l.accepted.Load() == 0; {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not count the probe", l.addr)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return &v6Forbidden{l: l, base: l.accepted.Load()}
}

// touched is how often the gateway connected since the probe.
func (f *v6Forbidden) touched() int64 { return f.l.accepted.Load() - f.base }

// v6Get opens an inspected tunnel to host:443 as acme and sends one GET on it: an inspected
// tunnel dials nothing before its first request, so the refusal comes with the response.
func v6Get(t *testing.T, f *fixture, roots *x509.CertPool, host string) (int, string) {
	t.Helper()
	code, reason, c := f.connect443(t, f.token, host)
	if code != 200 {
		t.Fatalf("CONNECT %s: %d %q", host, code, reason)
	}
	code, reason, err := startTLS(t, c, roots, host).get(host, "/")
	if err != nil {
		t.Fatalf("GET https://%s/: %v", host, err)
	}
	return code, reason
}

func TestIPv6(t *testing.T) {
	f := newFixture(t, ipv6Policy, "acme")
	w := f.w
	up := w.ServeUpstream(t, testnet.HostPort(v6UpstreamAddr, 443), f.upCA.ServerTLS(t, "v6.example.test"), nil)
	for _, a := range []netip.Addr{v6MetadataAddr, v6ULAAddr, v6NAT64Loop} {
		w.AddUpstreamAddr(t, a)
	}
	forbidden := map[string]*v6Forbidden{
		"loop6.example.test":       listenForbidden(t, w, w.Gateway, netip.IPv6Loopback()),
		"metadata6.example.test":   listenForbidden(t, w, w.Internet, v6MetadataAddr),
		"ula.example.test":         listenForbidden(t, w, w.Internet, v6ULAAddr),
		"mapped.example.test":      listenForbidden(t, w, w.Gateway, netip.MustParseAddr("127.0.0.1")),
		"nat64.example.test":       listenForbidden(t, w, w.Internet, v6NAT64Loop),
		"gateway6.example.test":    listenForbidden(t, w, w.Gateway, w.GatewaySandboxAddr6),
		"gateway6-in.example.test": listenForbidden(t, w, w.Gateway, w.GatewayInternetAddr6),
	}
	forbidden["loop6-pass.example.test"] = forbidden["loop6.example.test"]
	forbidden["metadata6-pass.example.test"] = forbidden["metadata6.example.test"]
	f.serve(t, "2s")
	trust := f.exportTrust(t, "acme")
	roots := trustRoots(t, trust)

	t.Run("curl reaches an allowed name on an IPv6 address", func(t *testing.T) {
		code, _, reason, body := f.sandboxCurl(t, envLines(t, trust), "https://v6.example.test/v6")
		if code != "200" || body != "hello from v6.example.test" {
			t.Fatalf("curl: %s %q (reason %q)", code, body, reason)
		}
		seen := up.Seen()
		if len(seen) != 1 || seen[0].Host != "v6.example.test" || seen[0].Path != "/v6" {
			t.Fatalf("the IPv6 upstream saw %+v, want one GET /v6 for v6.example.test", seen)
		}
	})

	t.Run("Go client reaches it too", func(t *testing.T) {
		resp, err := f.sandboxClient(t, "acme", f.token, roots).Get("https://v6.example.test/go")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.TLS.PeerCertificates[0].Issuer.CommonName == f.upCA.Cert.Subject.CommonName {
			t.Fatalf("%d, issuer %q: want 200 through the tenant CA", resp.StatusCode, resp.TLS.PeerCertificates[0].Issuer.CommonName)
		}
	})

	t.Run("forbidden IPv6 destinations are refused", func(t *testing.T) {
		tests := []struct {
			name        string
			passthrough bool
			why         string // the guard's reason in the gateway's log
		}{
			{"loop6.example.test", false, "addr=::1 why=loopback"},
			{"loop6-pass.example.test", true, "addr=::1 why=loopback"},
			{"metadata6.example.test", false, `addr=fd00:ec2::254 why="cloud metadata"`},
			{"metadata6-pass.example.test", true, `addr=fd00:ec2::254 why="cloud metadata"`},
			{"ula.example.test", false, `addr=fd12:3456::10 why="unique local`},
			// The config unmaps ::ffff:127.0.0.1 to 127.0.0.1.
			{"mapped.example.test", false, "addr=127.0.0.1 why=loopback"},
			{"nat64.example.test", false, `addr=64:ff9b::7f00:1 why="loopback (IPv4 127.0.0.1 embedded in a NAT64 address)"`},
			{"gateway6.example.test", false, `addr=2001:db8:1::1 why="gateway's own address"`},
			{"gateway6-in.example.test", false, `addr=2001:db8:2::1 why="gateway's own address"`},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				var code int
				var reason string
				if tc.passthrough {
					code, reason, _ = f.connect443(t, f.token, tc.name)
				} else {
					code, reason = v6Get(t, f, roots, tc.name)
				}
				if code != 403 || reason != "address-not-allowed" {
					t.Fatalf("%d %q, want 403 address-not-allowed", code, reason)
				}
				if want := "host=" + tc.name + " " + tc.why; !f.logged(want) {
					t.Errorf("the gateway's log lacks %q", want)
				}
			})
		}
		for name, l := range forbidden {
			if n := l.touched(); n != 0 {
				t.Errorf("%s (%s): the gateway connected %d times to a forbidden address", name, l.l.addr, n)
			}
		}
		if n := len(up.Seen()); n != 2 {
			t.Errorf("the IPv6 upstream saw %d requests, want only the 2 allowed ones", n)
		}
	})

	// Direct attempts time out (the gateway drops silently), so they run in parallel.
	t.Run("sandbox has no direct IPv6 way out", func(t *testing.T) {
		for _, addr := range []string{up.Addr, testnet.HostPort(v6MetadataAddr, 443), testnet.HostPort(w.InternetAddr6, 443)} {
			t.Run(addr, func(t *testing.T) {
				t.Parallel()
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				defer cancel()
				if c, err := w.Sandbox.DialContext(ctx, "tcp", addr); err == nil {
					c.Close()
					t.Errorf("sandbox reached %s directly", addr)
				}
			})
		}
		t.Run("curl without the proxy", func(t *testing.T) {
			t.Parallel()
			// -k: only the network may make this fail.
			cmd := w.Sandbox.Command(context.Background(), "curl", "-sS", "-g", "-k", "--max-time", "3", "--noproxy", "*",
				"https://[2001:db8:2::10]/direct")
			if out, err := cmd.CombinedOutput(); err == nil {
				t.Errorf("curl without the proxy reached the IPv6 upstream: %s", out)
			}
			for _, r := range up.Seen() {
				if r.Path == "/direct" {
					t.Error("the IPv6 upstream saw the direct request")
				}
			}
		})
	})
}
