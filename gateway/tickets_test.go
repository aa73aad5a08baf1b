package gateway_test

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"testing"
)

// anyHostCache hands the one session it holds to every server name: a
// sandbox that offers a ticket where it was not issued.
type anyHostCache struct {
	mu sync.Mutex
	s  *tls.ClientSessionState
}

func (c *anyHostCache) Get(string) (*tls.ClientSessionState, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.s, c.s != nil
}

func (c *anyHostCache) Put(_ string, s *tls.ClientSessionState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s != nil {
		c.s = s
	}
}

// resumeGet opens a tunnel to host for tenant, makes one GET inside with
// cfg (SNI sni) and reports whether the handshake resumed a session.
func resumeGet(w *world, tenant, host, sni string, cfg *tls.Config) (resumed bool, err error) {
	w.t.Helper()
	authority := net.JoinHostPort(host, strconv.Itoa(w.up.port))
	raw, resp := w.connect(tenant, w.tokens[tenant], authority)
	if raw == nil {
		w.t.Fatalf("CONNECT %s as %s: %s", authority, tenant, resp.Status)
	}
	defer raw.Close()
	cfg = cfg.Clone()
	cfg.ServerName = sni
	cfg.NextProtos = []string{"http/1.1"}
	c := tls.Client(raw, cfg)
	if err := c.Handshake(); err != nil {
		return false, err
	}
	// The ticket comes after the handshake: reading the answer takes it in.
	fmt.Fprintf(c, "GET /v1/resume HTTP/1.1\r\nHost: %s\r\n\r\n", authority)
	r, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return false, err
	}
	io.Copy(io.Discard, r.Body)
	r.Body.Close()
	if r.StatusCode != http.StatusOK {
		return false, fmt.Errorf("GET in the tunnel: %s", r.Status)
	}
	return c.ConnectionState().DidResume, nil
}

// A client that reconnects resumes its TLS session (the gateway's tickets
// are redeemable), but only into a tunnel of the same tenant and host, and a
// resumed handshake gets the SNI check too.
func TestTLSResumption(t *testing.T) {
	w := newWorld(t)
	t.Run("same tenant and host resumes", func(t *testing.T) {
		cfg := &tls.Config{RootCAs: w.tenantRoots("acme"), ClientSessionCache: tls.NewLRUClientSessionCache(4)}
		var got []bool
		for range 3 {
			resumed, err := resumeGet(w, "acme", "api.example.test", "api.example.test", cfg)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, resumed)
		}
		if !slices.Equal(got, []bool{false, true, true}) {
			t.Fatalf("resumed %v, want [false true true]", got)
		}
	})

	// The "malicious" clients below skip verification, which is what lets a
	// Go client offer a ticket for another name; the gateway must not take it.
	stolen := func(t *testing.T, tenant, host string) *tls.Config {
		cfg := &tls.Config{InsecureSkipVerify: true, ClientSessionCache: &anyHostCache{}}
		if _, err := resumeGet(w, tenant, host, host, cfg); err != nil {
			t.Fatal(err)
		}
		if resumed, err := resumeGet(w, tenant, host, host, cfg); err != nil || !resumed {
			t.Fatalf("the ticket did not resume where it was issued (%v): the test proves nothing", err)
		}
		return cfg
	}
	t.Run("another host does not resume", func(t *testing.T) {
		cfg := stolen(t, "acme", "api.example.test")
		resumed, err := resumeGet(w, "acme", "other.example.test", "other.example.test", cfg)
		if err != nil || resumed {
			t.Fatalf("api.example.test's ticket in other.example.test's tunnel: resumed %v, %v; want a full handshake", resumed, err)
		}
	})
	t.Run("another tenant does not resume", func(t *testing.T) {
		cfg := stolen(t, "acme", "other.example.test")
		resumed, err := resumeGet(w, "globex", "other.example.test", "other.example.test", cfg)
		if err != nil || resumed {
			t.Fatalf("acme's ticket in globex's tunnel: resumed %v, %v; want a full handshake", resumed, err)
		}
	})
	t.Run("a resumed handshake with another SNI is fronting", func(t *testing.T) {
		cfg := stolen(t, "acme", "api.example.test")
		before := len(w.sink.reasons())
		resumed, err := resumeGet(w, "acme", "api.example.test", "other.example.test", cfg)
		if err == nil {
			t.Fatalf("SNI other.example.test in api.example.test's tunnel with its ticket: handshake done (resumed %v), want refused", resumed)
		}
		// The gateway records the refusal as the handshake fails: maybe after the client saw it.
		waitFor(t, func() bool { return slices.Contains(w.sink.reasons()[before:], "domain-fronting") })
	})
}
