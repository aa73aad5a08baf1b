package gateway

import (
	"net"
	"net/http"
	"strings"

	"github.com/sluice-egress/sluice/rules"
)

// decideRequest asks the policy about a request at StageRequest, and again
// for every other reading of it an upstream may make, so that no reading the
// policy refuses gets through under one it allows:
//   - each method an override header, a _method query parameter or a
//     _method field of the body names (override.go);
//   - the path with %2F as a literal character: the policy matches on the
//     decoded path ("/v1%2Fadmin" is under "/v1/"), while a server that does
//     not decode %2F routes it as one segment outside /v1/.
//
// It upper-cases r.Method, which the policy matches without regard to case,
// so that the upstream gets the method that was checked.
func (g *Gateway) decideRequest(id rules.Identity, host string, port int, r *http.Request, ws bool) rules.Decision {
	r.Method = strings.ToUpper(r.Method)
	q := rules.Query{Identity: id, Host: host, Port: port,
		Method: r.Method, Path: r.URL.EscapedPath(), WebSocket: ws, Stage: rules.StageRequest}
	d := g.Policy.Decide(q)
	if d.Action != rules.Allow {
		return d
	}
	var alt []rules.Query
	for _, m := range g.methodOverrides(r, q) {
		a := q
		a.Method = m
		alt = append(alt, a)
	}
	if p, ok := literalEncodedSlash(q.Path); ok {
		a := q
		a.Path = p
		alt = append(alt, a)
	}
	for _, a := range alt {
		if ad := g.Policy.Decide(a); ad.Action != rules.Allow {
			return ad
		}
	}
	return d
}

// literalEncodedSlash returns the escaped path p with every %2F spelled as
// %2C, a character that separates nothing: the path as a server that keeps
// %2F inside a segment sees its structure. ok is false when p has no %2F.
func literalEncodedSlash(p string) (string, bool) {
	if !strings.Contains(p, "%2F") && !strings.Contains(p, "%2f") {
		return "", false
	}
	return strings.NewReplacer("%2F", "%2C", "%2f", "%2C").Replace(p), true
}

// upstreamHost is the Host header sent upstream: the checked, normalised
// host, with the port only where the client wrote one. Forwarding the
// client's own spelling ("API.example.test.", "api.example.test:0443")
// would let a virtual host or CDN route on a name the policy never matched.
// authority is host and port joined (net.JoinHostPort), made once per request.
func upstreamHost(clientHost, host, authority string) string {
	if _, _, err := net.SplitHostPort(clientHost); err == nil {
		return authority
	}
	if strings.Contains(host, ":") {
		return "[" + host + "]"
	}
	return host
}
