package gateway_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/sluice-egress/sluice/rules"
)

// swapPolicy is a policy whose rules can be replaced at run time, as the
// reloading holder in cmd does; run, when set, marks identities as a run's.
type swapPolicy struct {
	cur atomic.Pointer[denyHost]
	run string
}

// denyHost wraps a real engine and denies one host on top of it.
type denyHost struct {
	inner gatewayPolicy
	host  string
}

type gatewayPolicy interface {
	Identify(user, token string) (rules.Identity, error)
	Decide(q rules.Query) rules.Decision
}

func (p *swapPolicy) Identify(user, token string) (rules.Identity, error) {
	id, err := p.cur.Load().inner.Identify(user, token)
	id.Run = p.run
	return id, err
}

func (p *swapPolicy) Decide(q rules.Query) rules.Decision {
	c := p.cur.Load()
	if q.Host == c.host {
		return rules.Decision{Action: rules.Deny, Reason: rules.ReasonHostNotAllowed}
	}
	q.Identity.Run = "" // the run is this wrapper's fiction; the engine decides for the class
	return c.inner.Decide(q)
}

// openTunnel opens an inspected tunnel and serves one request on it.
func openTunnel(t *testing.T, w *world, host string) (net.Conn, *bufio.Reader) {
	authority := net.JoinHostPort(host, strconv.Itoa(w.up.port))
	tc, err := w.tlsInTunnel(t, authority, host, w.tenantRoots("acme"))
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(tc)
	fmt.Fprintf(tc, "GET /v1/a HTTP/1.1\r\nHost: %s\r\n\r\n", authority)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("first request: %v %v", resp, err)
	}
	io.Copy(io.Discard, resp.Body)
	return tc, br
}

func TestPolicyChangeClosesTunnelsOfHostsNoLongerAllowed(t *testing.T) {
	w := newWorld(t)
	p := &swapPolicy{}
	p.cur.Store(&denyHost{inner: w.gw.Policy})
	w.gw.Policy = p

	gone, goneBr := openTunnel(t, w, "other.example.test")
	kept, keptBr := openTunnel(t, w, "api.example.test")
	if n := w.gw.PolicyChanged(); n != 0 {
		t.Fatalf("unchanged policy closed %d tunnels", n)
	}
	p.cur.Store(&denyHost{inner: p.cur.Load().inner, host: "other.example.test"})
	if n := w.gw.PolicyChanged(); n != 1 {
		t.Fatalf("closed %d tunnels, want 1", n)
	}
	fmt.Fprintf(gone, "GET /v1/b HTTP/1.1\r\nHost: other.example.test:%d\r\n\r\n", w.up.port)
	if resp, err := http.ReadResponse(goneBr, nil); err == nil {
		t.Fatalf("tunnel to a host no longer allowed still answers: %d", resp.StatusCode)
	}
	fmt.Fprintf(kept, "GET /v1/c HTTP/1.1\r\nHost: api.example.test:%d\r\n\r\n", w.up.port)
	if resp, err := http.ReadResponse(keptBr, nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("tunnel to a host still allowed: %v %v", resp, err)
	}
}

func TestCloseRunClosesItsTunnels(t *testing.T) {
	w := newWorld(t)
	p := &swapPolicy{run: "run-1"}
	p.cur.Store(&denyHost{inner: w.gw.Policy})
	w.gw.Policy = p
	conn, br := openTunnel(t, w, "api.example.test")
	if n := w.gw.CloseRun("run-2"); n != 0 {
		t.Fatalf("another run's end closed %d tunnels", n)
	}
	if n := w.gw.CloseRun("run-1"); n != 1 {
		t.Fatalf("closed %d tunnels, want 1", n)
	}
	fmt.Fprintf(conn, "GET /v1/b HTTP/1.1\r\nHost: api.example.test:%d\r\n\r\n", w.up.port)
	if resp, err := http.ReadResponse(br, nil); err == nil {
		t.Fatalf("ended run's tunnel still answers: %d", resp.StatusCode)
	}
}
