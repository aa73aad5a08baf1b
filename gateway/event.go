package gateway

import (
	"context"
	"strings"
	"time"
	"unicode"
)

// Reasons the gateway itself gives for a refusal, besides the policy's own
// (rules.Reason*). They are sent in the Sluice-Reason header and counted.
const (
	ReasonAuthRequired        = "proxy-auth-required"
	ReasonAddressNotAllowed   = "address-not-allowed"
	ReasonDomainFronting      = "domain-fronting"
	ReasonUpgradeNotAllowed   = "upgrade-not-allowed"
	ReasonNotProxyRequest     = "not-a-proxy-request"
	ReasonUpstreamTLS         = "upstream-tls-failed"
	ReasonUpstreamUnreachable = "upstream-unreachable"
	ReasonTLSHandshake        = "client-tls-failed"
	ReasonCAUnavailable       = "ca-unavailable"
)

// Event is one thing the gateway refused, blocked or flagged. It never holds a
// secret: no query string, no header values, no body.
type Event struct {
	Time   time.Time
	Tenant string // "" when the client did not authenticate
	Class  string
	Run    string
	Kind   string // "deny" for refusals; findings: "secret", "exfil-link", "canary", "oversize", …
	Reason string // e.g. "host-not-allowed", "secret-detected"
	Action string // "block" (refused), "redact" (forwarded with the secret replaced) or "alert" (forwarded, recorded)
	Host   string
	Port   int
	Method string
	Path   string // path without the query string
	Client string // the client's address as the gateway saw it

	// Set for findings only.
	Rule        string // the detection rule's id
	Where       string // where it was found: "url", "header:Authorization", "json:$.messages[3].content"
	Decoding    string // the decoding chain that revealed it, e.g. "gzip > base64"
	Snippet     string // redacted evidence: never the secret itself
	Fingerprint string // keyed hash of the secret, to group incidents without storing it
}

// EventSink receives the gateway's events. Emit must not block for long: it is
// called on the request path. It returns the incident id when the event was
// recorded as one, or "".
type EventSink interface {
	Emit(ctx context.Context, e Event) (incidentID string)
}

// maxEventPath bounds the path an event keeps.
const maxEventPath = 256

// eventPath is the path as an event may keep it. A refused request was not
// scanned, and a path can carry a secret (/hook/<token>): segments that look
// like data — long, or mixing letters and digits densely — are replaced.
func eventPath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		if looksLikeData(s) {
			segs[i] = "{redacted}"
		}
	}
	out := strings.Join(segs, "/")
	if len(out) > maxEventPath {
		out = out[:maxEventPath] + "…"
	}
	return out
}

// looksLikeData reports whether a path segment is more likely a token or an
// encoded payload than a name: long, or 16+ characters with both letters and
// digits and few repeats.
func looksLikeData(s string) bool {
	if len(s) > 40 {
		return true
	}
	if len(s) < 16 {
		return false
	}
	var letters, digits int
	seen := map[rune]bool{}
	for _, c := range s {
		switch {
		case unicode.IsDigit(c):
			digits++
		case unicode.IsLetter(c):
			letters++
		}
		seen[c] = true
	}
	return letters > 0 && digits > 0 && len(seen) >= len(s)/2
}

// discardSink is used when Gateway.Events is nil.
type discardSink struct{}

func (discardSink) Emit(context.Context, Event) string { return "" }
