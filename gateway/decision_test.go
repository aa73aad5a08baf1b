package gateway_test

import (
	"context"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/sluice-egress/sluice/gateway"
	"github.com/sluice-egress/sluice/gateway/guard"
	"github.com/sluice-egress/sluice/rules"
)

// reloadPolicy is the policy before and after a reload: %[1]d is the TLS
// upstream's port, %[2]d the plain one's, %[3]s the entries' allow_addresses.
// The upstreams live on loopback, which the dialer here denies (its default
// ranges): only allow_addresses opens it.
const reloadPolicy = `
version: 1
upstream:
  hosts:
    pass.example.test: 127.0.0.1
    plain.example.test: 127.0.0.1
tenants:
  acme:
    token_file: acme.token
    classes:
      agent:
        allow:
          - host: plain.example.test
            ports: [%[2]d]
            %[3]s
        passthrough:
          - host: pass.example.test
            ports: [%[1]d]
            %[3]s
`

// reloadAfterDecide decides with the current engine and then installs the
// next one: a reload that lands between a decision and its dial.
type reloadAfterDecide struct {
	mu        sync.Mutex
	cur, next *rules.Engine
}

func (p *reloadAfterDecide) Identify(user, token string) (rules.Identity, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cur.Identify(user, token)
}

func (p *reloadAfterDecide) Decide(q rules.Query) rules.Decision {
	p.mu.Lock()
	defer p.mu.Unlock()
	d := p.cur.Decide(q)
	if p.next != nil {
		p.cur, p.next = p.next, nil
	}
	return d
}

func compileReloadPolicy(t *testing.T, w *world, allow string) *rules.Engine {
	t.Helper()
	return acmePolicy(t, t.TempDir(), w.tokens["acme"], fmt.Sprintf(reloadPolicy, w.up.port, w.plainPort, allow))
}

// TestDecisionDialsWhatItWasDecidedFor checks that the addresses an entry
// opens travel with the decision: a reload between decision and dial neither
// takes them away from the request already decided nor lends them to the
// next one.
func TestDecisionDialsWhatItWasDecidedFor(t *testing.T) {
	w := newWorld(t)
	before := compileReloadPolicy(t, w, "allow_addresses: [127.0.0.1]")
	policy := &reloadAfterDecide{cur: before}
	var dialedMu sync.Mutex
	var dialed [][]netip.Prefix
	d := &guard.Dialer{Hosts: before.UpstreamHosts(), Deny: guard.DefaultDeny(), Self: func() []netip.Addr { return nil }}
	gw := &gateway.Gateway{
		Policy: policy,
		Dialer: dialerFunc(func(ctx context.Context, tg guard.Target) (net.Conn, error) {
			dialedMu.Lock()
			dialed = append(dialed, tg.Allow)
			dialedMu.Unlock()
			return d.Dial(ctx, tg)
		}),
		Events: w.sink,
	}
	rw := *w
	rw.proxyAddr = serveOnLoopback(t, gw)
	roots := x509.NewCertPool()
	roots.AddCert(w.upCA.Cert)

	for _, tc := range []struct {
		name string
		get  func(c *http.Client) (*http.Response, error)
	}{
		{"forward", func(c *http.Client) (*http.Response, error) {
			return c.Get("http://" + net.JoinHostPort("plain.example.test", strconv.Itoa(w.plainPort)) + "/x")
		}},
		{"passthrough", func(c *http.Client) (*http.Response, error) {
			return c.Get(w.url("pass.example.test", "/blind"))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			policy.mu.Lock()
			policy.cur, policy.next = before, compileReloadPolicy(t, w, "")
			policy.mu.Unlock()
			dialedMu.Lock()
			dialed = nil
			dialedMu.Unlock()

			c := rw.client("acme", w.tokens["acme"], roots)
			defer c.CloseIdleConnections() // a blind tunnel cannot be drained
			// Decided before the reload: it dials loopback as its entry allowed.
			resp, err := tc.get(c)
			if err != nil {
				t.Fatalf("request decided before the reload: %v", err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("request decided before the reload: %d %s", resp.StatusCode, resp.Header.Get("Sluice-Reason"))
			}
			c.CloseIdleConnections()
			// Decided after it: the entry no longer opens loopback.
			resp, err = tc.get(c)
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					t.Fatal("request decided after the reload reached loopback")
				}
			} else if !strings.Contains(err.Error(), "Forbidden") && !strings.Contains(err.Error(), "403") {
				t.Fatalf("request decided after the reload: %v", err)
			}
			dialedMu.Lock()
			defer dialedMu.Unlock()
			want := []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
			if len(dialed) != 2 || fmt.Sprint(dialed[0]) != fmt.Sprint(want) || dialed[1] != nil {
				t.Errorf("dialled with allowances %v, want %v then none", dialed, want)
			}
		})
	}
}

// dialerFunc is a gateway.Dialer from a function.
type dialerFunc func(ctx context.Context, t guard.Target) (net.Conn, error)

func (f dialerFunc) Dial(ctx context.Context, t guard.Target) (net.Conn, error) { return f(ctx, t) }
