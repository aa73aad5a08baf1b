package gateway

import (
	"io"
	"net/http"
	"strings"
)

// sluiceHeaderPrefix starts every header the gateway itself sends
// (Sluice-Reason, Sluice-Incident, …): the namespace is the gateway's.
const sluiceHeaderPrefix = "Sluice-"

// stripSluiceHeaders removes from h every header in the gateway's
// namespace, so that an upstream cannot forge a verdict (a refusal, an
// incident id, a warning) the client and sluice doctor would believe.
func stripSluiceHeaders(h http.Header) {
	for k := range h {
		if len(k) >= len(sluiceHeaderPrefix) && strings.EqualFold(k[:len(sluiceHeaderPrefix)], sluiceHeaderPrefix) {
			delete(h, k)
		}
	}
}

// modifyResponse is ReverseProxy's ModifyResponse for every forwarded
// request: the upstream's Sluice-* headers and trailers go (on a 101 too:
// ReverseProxy calls it before it copies an upgrade's headers), then the
// real secrets of inj are scrubbed.
func (g *Gateway) modifyResponse(inj *injection) func(*http.Response) error {
	return func(resp *http.Response) error {
		stripSluiceHeaders(resp.Header)
		stripSluiceHeaders(resp.Trailer)
		if resp.Body != nil && resp.Body != http.NoBody && resp.StatusCode != http.StatusSwitchingProtocols {
			// Trailers are filled in once the body is read to its end.
			f := &trailerFilter{ReadCloser: resp.Body, resp: resp}
			if sc := inj.scrubber(); sc != nil {
				f.scrub = sc.Header
			}
			resp.Body = f
		}
		if !inj.hasSwaps() {
			return nil
		}
		return inj.scrub(resp)
	}
}

// trailerFilter strips the gateway's namespace from the trailers (and, with
// scrub set, secrets from their values) when the body ends: ReverseProxy
// copies resp.Trailer only after that.
type trailerFilter struct {
	io.ReadCloser
	resp  *http.Response
	scrub func(http.Header)
}

func (f *trailerFilter) Read(p []byte) (int, error) {
	n, err := f.ReadCloser.Read(p)
	if err != nil {
		stripSluiceHeaders(f.resp.Trailer)
		if f.scrub != nil {
			f.scrub(f.resp.Trailer)
		}
	}
	return n, err
}
