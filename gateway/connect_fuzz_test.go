package gateway

import (
	"bufio"
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"testing"

	"github.com/sluice-egress/sluice/incident"
	"github.com/sluice-egress/sluice/rules"
)

// askedPolicy records what it was asked; it opens even ports for
// inspection and odd ones blind, so both ways are walked.
type askedPolicy struct {
	mu   sync.Mutex
	asks []rules.Query
}

func (p *askedPolicy) Identify(string, string) (rules.Identity, error) {
	return rules.Identity{Tenant: "t", Class: "agent"}, nil
}

func (p *askedPolicy) Decide(q rules.Query) rules.Decision {
	p.mu.Lock()
	p.asks = append(p.asks, q)
	p.mu.Unlock()
	switch {
	case q.Stage != rules.StageConnect:
		return rules.Decision{Action: rules.Allow}
	case q.Port%2 == 0:
		return rules.Decision{Action: rules.Inspect}
	}
	return rules.Decision{Action: rules.Passthrough}
}

func (p *askedPolicy) AllowedAddresses(rules.Decision) []netip.Prefix { return nil }

type reasonSink struct {
	mu      sync.Mutex
	reasons []string
}

func (s *reasonSink) Emit(_ context.Context, in incident.Incident) (string, error) {
	s.mu.Lock()
	s.reasons = append(s.reasons, in.Reason)
	s.mu.Unlock()
	return "", nil
}

// FuzzProxyRequest feeds arbitrary request heads (CONNECT lines and
// authorities above all) to the proxy handler: it must never panic, and
// the policy is only ever asked about a normalised host and a real port.
func FuzzProxyRequest(f *testing.F) {
	auth := "Proxy-Authorization: Basic dDp0b2tlbg==\r\n"
	for _, s := range []string{
		"CONNECT api.example.test:443 HTTP/1.1\r\nHost: api.example.test:443\r\n" + auth + "\r\n",
		"CONNECT [::1]:443 HTTP/1.1\r\n" + auth + "\r\n",
		"CONNECT API.Example.Test.:0443 HTTP/1.1\r\n" + auth + "\r\n",
		"CONNECT 127.0.0.1 HTTP/1.1\r\n" + auth + "\r\n",
		"CONNECT xn--n3h.test:65536 HTTP/1.1\r\n" + auth + "\r\n",
		"CONNECT %31.example.test:443 HTTP/1.1\r\n" + auth + "\r\n",
		"GET http://a.test:80/x?_method=DELETE HTTP/1.1\r\nHost: a.test\r\n" + auth + "\r\n",
		"GET http://[fe80::1%25eth0]:8080/ HTTP/1.1\r\n" + auth + "\r\n",
		"POST http://a.test/ HTTP/1.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 10\r\n" + auth + "\r\n_method=PU",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(data)))
		if err != nil {
			return // net/http's own parser refused it first
		}
		p, sink := &askedPolicy{}, &reasonSink{}
		g := &Gateway{Policy: p, Dialer: noDialer{}, Events: sink, Logger: slog.New(slog.DiscardHandler)}
		r.RemoteAddr = "192.0.2.1:1234"
		rec := httptest.NewRecorder()
		g.ServeHTTP(rec, r)
		for _, reason := range sink.reasons {
			if reason == ReasonInternalError {
				t.Fatalf("the handler panicked on %q", data)
			}
		}
		for _, q := range p.asks {
			if n, err := rules.NormalizeHost(q.Host); err != nil || n != q.Host {
				t.Fatalf("policy asked about %q, not a normalised host (%q, %v)", q.Host, n, err)
			}
			if q.Port <= 0 || q.Port > 65535 {
				t.Fatalf("policy asked about port %d", q.Port)
			}
		}
	})
}
