package e2e

import (
	"bufio"
	"context"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/sluice-egress/sluice/internal/testnet"
)

// hostExfilPolicy allows a wildcard and resolves every name through the
// test's DNS server: what the gateway resolves, the server sees.
const hostExfilPolicy = `
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
          - host: "*.wild.example.test"
`

// A name under an allowed "*." entry whose labels carry data is refused
// with exfil-hostname before the gateway resolves it: the DNS server (the
// zone's operator, for an attacker's domain) never sees the name. An
// ordinary name under the same entry is resolved and reached, so the
// server would have seen a query.
func TestHostLabelExfiltration(t *testing.T) {
	f := newFixture(t, hostExfilPolicy, "acme")
	w := f.w
	w.AddUpstreamAddr(t, dnsAddr)
	dns := startDNS(t, w.Internet, dnsAddr)
	useResolver(t, w.Gateway, dnsAddr)
	up := w.ServeUpstream(t, testnet.HostPort(apiAddr, 443), f.upCA.ServerTLS(t, "www.wild.example.test"), nil)
	dns.static("www.wild.example.test", apiAddr)
	f.serve(t, "2s")
	roots := trustRoots(t, f.exportTrust(t, "acme"))

	secret := "db_password=" + randomToken(t)[:20]
	names := map[string]string{
		"hex":         hex.EncodeToString([]byte(secret))[:48] + ".wild.example.test",
		"many labels": "q1.w2.e3.r4.t5.y6.wild.example.test",
	}
	for name, host := range names {
		t.Run("CONNECT/"+name, func(t *testing.T) {
			code, reason, _ := f.connect443(t, f.token, host)
			if code != http.StatusForbidden || reason != "exfil-hostname" {
				t.Fatalf("CONNECT: %d %q, want 403 exfil-hostname", code, reason)
			}
			time.Sleep(100 * time.Millisecond)
			for _, typ := range []dnsmessage.Type{dnsmessage.TypeA, dnsmessage.TypeAAAA} {
				if n := dns.count(host, typ); n != 0 {
					t.Fatalf("the DNS server got %d %v queries for the refused name", n, typ)
				}
			}
		})
	}
	t.Run("plain request", func(t *testing.T) {
		host := names["hex"]
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, err := w.Sandbox.DialContext(ctx, "tcp", proxyAddr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "GET http://%s/ HTTP/1.1\r\nHost: %s\r\nProxy-Authorization: Basic %s\r\n\r\n", host, host, basicAuth("acme", f.token))
		c.SetDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Sluice-Reason") != "exfil-hostname" {
			t.Fatalf("GET: %d %q, want 403 exfil-hostname", resp.StatusCode, resp.Header.Get("Sluice-Reason"))
		}
		if n := dns.count(host, dnsmessage.TypeA); n != 0 {
			t.Fatalf("the DNS server got %d queries for the refused name", n)
		}
	})
	t.Run("an ordinary name is resolved and reached", func(t *testing.T) {
		code, reason, c := f.connect443(t, f.token, "www.wild.example.test")
		if code != 200 {
			t.Fatalf("CONNECT: %d %q", code, reason)
		}
		code, reason, err := startTLS(t, c, roots, "www.wild.example.test").get("www.wild.example.test", "/")
		if err != nil || code != 200 {
			t.Fatalf("GET: %d %q %v", code, reason, err)
		}
		if dns.count("www.wild.example.test", dnsmessage.TypeA) == 0 || len(up.Seen()) != 1 {
			t.Fatalf("the ordinary name was not resolved and reached (%d upstream requests)", len(up.Seen()))
		}
	})
	t.Run("the log holds no refused label", func(t *testing.T) {
		for _, host := range names {
			if l := strings.Split(host, ".")[0]; strings.Contains(f.log(), l) {
				t.Fatalf("the gateway log holds the label %q", l)
			}
		}
	})
}
