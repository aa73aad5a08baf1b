package gateway

import (
	"net/http"
	"strings"

	"github.com/sluice-egress/sluice/incident"
	"github.com/sluice-egress/sluice/rules"
)

// Observer is told of every request the gateway forwards (and every blind
// tunnel it opens), for drafting a policy from what runs did. Observe is
// called on the request path: it must not block (cmd batches into the
// store off the hot path, dropping when behind).
type Observer interface {
	Observe(o Observation)
}

// Observation is one forwarded request, reduced to what a policy names.
type Observation struct {
	Who  rules.Identity
	Host string
	Port int
	// Method is CONNECT for a blind tunnel.
	Method string
	// Path is the path's first observedSegments segments, redacted as an
	// incident's is; "" for a blind tunnel.
	Path string
	// Shadow: the policy refused it and shadow mode let it through.
	Shadow bool
}

// observedSegments is how much of a path an observation keeps: enough for a
// policy's prefixes, not a log of every URL.
const observedSegments = 3

// observed wraps a ReverseProxy's ModifyResponse: a request is observed
// once its upstream answered (one the guard refused, or that failed to
// reach its upstream, was not let through). path is the request's path as
// the scan left it safe to keep (secrets it found masked, those it let pass
// too).
func (g *Gateway) observed(id rules.Identity, d rules.Decision, host string, port int, method, path string, next func(*http.Response) error) func(*http.Response) error {
	if g.Observer == nil {
		return next
	}
	return func(resp *http.Response) error {
		g.observe(id, d, host, port, method, path)
		return next(resp)
	}
}

func (g *Gateway) observe(id rules.Identity, d rules.Decision, host string, port int, method, path string) {
	if g.Observer == nil {
		return
	}
	g.Observer.Observe(Observation{Who: id, Host: host, Port: port, Method: method,
		Path: pathPrefix(incident.RedactPath(path), observedSegments), Shadow: d.Entry == nil})
}

// pathPrefix keeps the first n segments of p ("/a/b/c/d" -> "/a/b/c/");
// a shorter path is kept whole.
func pathPrefix(p string, n int) string {
	if p == "" {
		return ""
	}
	i, seen := 0, 0
	for i < len(p) {
		j := strings.IndexByte(p[i+1:], '/')
		if j < 0 {
			return p
		}
		i += j + 1
		seen++
		if seen == n {
			return p[:i+1]
		}
	}
	return p
}
