package gateway

import (
	"context"
	"net/http"

	"github.com/sluice-egress/sluice/internal/probetag"
)

// The tag `sluice doctor` puts on its probes (internal/probetag), so that their
// refusals are counted and logged but not stored as incidents. It hides nothing a
// sandbox could use: a tagged request is decided, scanned and refused like any other,
// and its findings are recorded as usual; only the refusal's incident is left out.
const (
	ProbeHeader = probetag.Header
	ProbeDoctor = probetag.Doctor
)

// IsProbe reports whether r carries the doctor's tag.
func IsProbe(r *http.Request) bool {
	if r == nil {
		return false
	}
	ok, _ := probetag.Parse(r.Header.Get(ProbeHeader))
	return ok
}

// probeKeyCtx carries the proof key of a client without a token (a transparent
// sandbox's: its tenant CA's).
type probeKeyCtx struct{}

func withProbeKey(ctx context.Context, key []byte) context.Context {
	if key == nil {
		return ctx
	}
	return context.WithValue(ctx, probeKeyCtx{}, key)
}

// setProbeProof answers a tagged probe that sent a nonce with the proof that this
// refusal is the gateway's: an HMAC of the nonce and reason under a key the upstream
// cannot know (the client's proxy token, or for a transparent sandbox its tenant CA).
func setProbeProof(w http.ResponseWriter, r *http.Request, reason string) {
	if r == nil {
		return
	}
	ok, nonce := probetag.Parse(r.Header.Get(ProbeHeader))
	if !ok || nonce == "" {
		return
	}
	key, _ := r.Context().Value(probeKeyCtx{}).([]byte)
	if key == nil {
		_, token, found := proxyCredentials(r.Header.Get("Proxy-Authorization"))
		if !found {
			return
		}
		key = probetag.KeyFromToken(token)
	}
	w.Header().Set(probetag.ProofHeader, probetag.Proof(key, nonce, reason))
}
