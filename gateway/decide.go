package gateway

import (
	"bytes"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/sluice-egress/sluice/rules"
)

// overrideHeaders name a method that many frameworks (Express's
// method-override, Laravel, Symfony, Google's APIs) route on instead of the
// request line's: POST with X-HTTP-Method-Override: DELETE is a DELETE there.
var overrideHeaders = []string{"X-HTTP-Method-Override", "X-HTTP-Method", "X-Method-Override"}

// decideRequest asks the policy about a request at StageRequest, and again
// for every other reading of it an upstream may make, so that no reading the
// policy refuses gets through under one it allows:
//   - each method an override header or a _method query parameter names;
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
	for _, m := range methodOverrides(r) {
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

// maxFormPeek is how much of a form body is read to find a _method field
// (Rails, Laravel and Symfony route on it). A longer or malformed form is
// refused where an entry limits methods, since an override could not be
// ruled out.
const maxFormPeek = 1 << 20

// methodOverrides returns the methods r names besides its own, upper-cased:
// override headers, _method in the query and, for a urlencoded form, in the
// body. A form body is read into memory and put back for the forwarding.
func methodOverrides(r *http.Request) []string {
	out := headerOverrides(r)
	if m, ok := formOverrides(r); ok {
		out = append(out, m...)
	} else {
		// An unreadable or oversize form: read it as overriding with a
		// method no entry allows, so that the request is refused.
		out = append(out, "_METHOD-UNREADABLE")
	}
	return out
}

// formOverrides reads the _method fields of an application/x-www-form-urlencoded
// body and restores the body. ok is false when the body could not be read
// whole within maxFormPeek.
func formOverrides(r *http.Request) (methods []string, ok bool) {
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct != "application/x-www-form-urlencoded" || r.Body == nil || r.Body == http.NoBody {
		return nil, true
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, maxFormPeek+1))
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(b), r.Body), r.Body}
	if err != nil || len(b) > maxFormPeek {
		return nil, false
	}
	vals, err := url.ParseQuery(string(b))
	if err != nil {
		return nil, false
	}
	for _, m := range vals["_method"] {
		methods = append(methods, strings.ToUpper(strings.TrimSpace(m)))
	}
	return methods, true
}

// headerOverrides returns the methods r's override headers and query name.
func headerOverrides(r *http.Request) []string {
	var out []string
	for _, h := range overrideHeaders {
		for _, v := range r.Header.Values(h) {
			for m := range strings.SplitSeq(v, ",") {
				out = append(out, strings.ToUpper(strings.TrimSpace(m)))
			}
		}
	}
	if r.URL != nil && strings.Contains(r.URL.RawQuery, "_method") {
		for _, m := range r.URL.Query()["_method"] {
			out = append(out, strings.ToUpper(strings.TrimSpace(m)))
		}
	}
	return out
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
func upstreamHost(clientHost, host string, port int) string {
	if _, _, err := net.SplitHostPort(clientHost); err == nil {
		return net.JoinHostPort(host, strconv.Itoa(port))
	}
	if strings.Contains(host, ":") {
		return "[" + host + "]"
	}
	return host
}
