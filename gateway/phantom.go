package gateway

import (
	"net/http"
	"strings"
	"sync"

	"github.com/sluice-egress/sluice/phantom"
	"github.com/sluice-egress/sluice/rules"
	"github.com/sluice-egress/sluice/scanner"
)

// Credentials finds the phantom credentials a run (or a tenant, run "")
// holds. *phantom.Registry implements it.
type Credentials interface {
	Uses(tenant, run string) []*phantom.Use
}

var _ Credentials = (*phantom.Registry)(nil)

// Reasons and kinds of the credential swap.
const (
	// ReasonCredentialUnavailable: the real secret could not be read; the
	// request was not forwarded.
	ReasonCredentialUnavailable = "credential-unavailable"
	// ReasonRealCredential: a request to a bound host carried a real-looking
	// secret of the credential's kind instead of its phantom (an alert).
	ReasonRealCredential = "real-credential"
	// KindCredential is the event kind of ReasonRealCredential.
	KindCredential = "credential"
	// ReasonResponseUnscrubbable: the response of a host a credential is
	// bound to came in an encoding the gateway cannot scrub of real
	// secrets (br, zstd, stacked encodings); it was not passed on.
	ReasonResponseUnscrubbable = "response-unscrubbable"
)

// inTunnel reports whether r came through an inspected TLS tunnel (its URL
// is in origin form), as opposed to a plain-HTTP proxy request. Real secrets
// are only injected into TLS.
func inTunnel(r *http.Request) bool { return r.URL != nil && !r.URL.IsAbs() }

// phantomAllowed says, for the scanner, which phantoms of this run sit in
// their bound place in r: a bound host, port and path, inside TLS, in the
// header or query parameter the credential names. nil: no credentials.
// Where a phantom belongs but a real-looking secret of its kind sits
// instead, it records an alert (whatever the scan then decides); err says
// that alert could not be recorded.
func (g *Gateway) phantomAllowed(r *http.Request, id rules.Identity, host string, port int) (func(fp, where, decoding string) bool, error) {
	if g.Credentials == nil || !inTunnel(r) {
		return nil, nil
	}
	var recErr error
	var ok []*phantom.Use
	for _, u := range g.Credentials.Uses(id.Tenant, id.Run) {
		if !u.Binds(host, port, r.URL.EscapedPath()) {
			continue
		}
		if u.InPlace(r) {
			ok = append(ok, u)
			continue
		}
		real, _ := u.Credential.Secret.Secret() // unreadable: only the shape is compared
		if fp, found := u.Lookalike(r, real); found {
			if err := g.alertRealCredential(r, id, host, port, u, fp); err != nil {
				recErr = err
			}
		}
	}
	if recErr != nil {
		return nil, recErr
	}
	if len(ok) == 0 {
		return nil, nil
	}
	return func(fp, where, decoding string) bool {
		for _, u := range ok {
			w, d := u.Where()
			if u.Fingerprint == fp && w == where && d == decoding {
				return true
			}
		}
		return false
	}, nil
}

// injection is what forward does for the credentials of one request: the
// swaps into the request and, for responses, back.
type injection struct {
	g      *Gateway
	id     rules.Identity
	host   string
	inject []injectUse
	swaps  []phantom.Swap // complete once apply has run
	sc     *phantom.Scrubber
	scOnce sync.Once
}

type injectUse struct {
	use  *phantom.Use
	real string
}

// credentials prepares the swap for a scanned request about to be forwarded:
// it reads the real secrets of the credentials bound to host:port and refuses the request
// (reporting false) when a secret it needs cannot be read. A nil injection
// does nothing.
func (g *Gateway) credentials(w http.ResponseWriter, r *http.Request, id rules.Identity, host string, port int) (*injection, bool) {
	if g.Credentials == nil || !inTunnel(r) {
		return nil, true
	}
	var inj *injection
	for _, u := range g.Credentials.Uses(id.Tenant, id.Run) {
		if !u.BindsHost(host, port) {
			continue
		}
		if r.Method == "TRACE" || r.Method == "TRACK" {
			// TRACE reflects the request as the upstream got it: with the
			// real secret, in the body, where no scrub expects it.
			g.refuse(w, r, refusal{id: id, status: http.StatusForbidden, reason: rules.ReasonMethodNotAllowed,
				host: host, port: port, path: r.URL.Path,
				msg: r.Method + " is not allowed towards a host a credential is bound to: it would reflect the credential"})
			return nil, false
		}
		real, err := u.Credential.Secret.Secret()
		if err != nil {
			g.logger().Error("credential unavailable", logTenant, id.Tenant, "credential", u.Credential.Name, logErr, err)
			if u.Binds(host, port, r.URL.EscapedPath()) && u.InPlace(r) {
				g.refuse(w, r, refusal{id: id, status: http.StatusServiceUnavailable, reason: ReasonCredentialUnavailable,
					host: host, port: port, path: r.URL.Path,
					msg: "the gateway could not read the credential " + u.Credential.Name + "; nothing was forwarded"})
				return nil, false
			}
			continue
		}
		if inj == nil {
			inj = &injection{g: g, id: id, host: host}
		}
		inj.swaps = append(inj.swaps, phantom.Swap{Real: real, Phantom: u.Phantom})
		if !u.Binds(host, port, r.URL.EscapedPath()) {
			continue
		}
		if u.InPlace(r) {
			inj.inject = append(inj.inject, injectUse{use: u, real: real})
		}
	}
	return inj, true
}

// alertRealCredential records that the sandbox sent a real-looking secret
// where its phantom belongs: it got hold of a real one.
func (g *Gateway) alertRealCredential(r *http.Request, id rules.Identity, host string, port int, u *phantom.Use, fp string) error {
	where, _ := u.Where()
	_, err := g.recordFinding(r.Context(), r, id, host, port, g.evidencePath(r.Context(), id.Tenant, r.URL.Path), scanner.Finding{
		Kind: KindCredential, Rule: ReasonRealCredential + ":" + u.Credential.Name, Where: where,
		Snippet: "a value of the credential's kind that is not its phantom", Fingerprint: fp, Action: scanner.Alert,
	})
	return err
}

// apply swaps phantoms for real secrets in the outgoing request. Where the
// response will be scrubbed, it also keeps the upstream from answering in a
// way the scrub cannot read: only encodings it reads are offered, and no
// Range is asked for (a part of an echo can hold part of a secret, which no
// scrub recognises).
func (inj *injection) apply(out *http.Request) {
	if inj == nil {
		return
	}
	for _, iu := range inj.inject {
		wire, _ := iu.use.InjectWire(out, iu.real)
		inj.swaps = append(inj.swaps, wire...)
	}
	if len(inj.swaps) == 0 {
		return
	}
	out.Header.Set("Accept-Encoding", scrubbableEncoding(out.Header.Values("Accept-Encoding")))
	out.Header.Del("Range")
	out.Header.Del("If-Range")
}

// scrubbableEncoding is the Accept-Encoding offered upstream for a response
// that will be scrubbed: gzip where the client accepts it, else identity.
func scrubbableEncoding(accept []string) string {
	for _, v := range accept {
		for part := range strings.SplitSeq(v, ",") {
			name, params, _ := strings.Cut(part, ";")
			name = strings.ToLower(strings.TrimSpace(name))
			if name != "gzip" && name != "x-gzip" && name != "*" {
				continue
			}
			q := strings.ReplaceAll(strings.ToLower(params), " ", "")
			if q == "q=0" || strings.HasPrefix(q, "q=0.") && strings.Trim(q[4:], "0") == "" {
				continue // refused by the client
			}
			return "gzip"
		}
	}
	return "identity"
}

// scrubber is the scrubber of every swap; nil when there are none. It is
// built once, after apply.
func (inj *injection) scrubber() *phantom.Scrubber {
	if inj == nil {
		return nil
	}
	inj.scOnce.Do(func() { inj.sc = phantom.NewScrubber(inj.swaps) })
	return inj.sc
}

// hasSwaps reports whether responses to this request are scrubbed.
func (inj *injection) hasSwaps() bool { return inj != nil && len(inj.swaps) > 0 }

// scrub replaces real secrets echoed in a response with their phantoms. A
// body it cannot read is an error (phantom.ErrUnscrubbable): ReverseProxy
// then answers through its ErrorHandler, and nothing of it is passed on.
func (inj *injection) scrub(resp *http.Response) error {
	if err := inj.scrubber().Response(resp); err != nil {
		inj.g.logger().Warn("response refused: cannot be scrubbed of credentials",
			logTenant, inj.id.Tenant, logHost, inj.host, "encoding", resp.Header.Values("Content-Encoding"))
		return err
	}
	return nil
}
