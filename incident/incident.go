// Package incident holds the one incident type that the gateway records and
// the store, alerts and dashboard show, with the clipping and redaction that
// keep secrets and floods of attacker-controlled text out of it.
package incident

import "time"

// Incident is one thing the gateway refused, blocked or flagged. It never
// holds a secret: no query string, no header values, no body; Snippet is
// redacted evidence and Fingerprint a keyed hash. Its JSON is the API's.
type Incident struct {
	// ID is the store's id ("inc_…"); "" until the incident is stored.
	ID     string    `json:"id"`
	Time   time.Time `json:"time"`
	Tenant string    `json:"tenant"` // "" when the client did not authenticate
	Class  string    `json:"class,omitempty"`
	Run    string    `json:"run,omitempty"`
	Kind   string    `json:"kind"`   // "deny" for refusals; findings: "secret", "exfil-link", "canary", "oversize", …
	Reason string    `json:"reason"` // e.g. "host-not-allowed", "secret-detected"
	Action string    `json:"action"` // "block" (refused), "redact" (forwarded with the secret replaced) or "alert" (forwarded, recorded)
	Host   string    `json:"host"`
	Port   int       `json:"port,omitempty"`
	Method string    `json:"method,omitempty"`
	Path   string    `json:"path,omitempty"`   // never with the query string
	Client string    `json:"client,omitempty"` // the client's address as the gateway saw it
	// Probe marks the refusal of a request that `sluice doctor` tagged (the Sluice-Probe
	// header): counted, logged, not stored, so that proving the fence does not fill the
	// incident list. Findings are never probes.
	Probe bool `json:"-"`

	// Set for findings only.
	Rule        string `json:"rule,omitempty"`        // the detection rule's id
	Where       string `json:"where,omitempty"`       // where it was found: "url", "header:Authorization", "json:$.messages[3].content"
	Decoding    string `json:"decoding,omitempty"`    // the decoding chain that revealed it, e.g. "gzip > base64"
	Snippet     string `json:"snippet,omitempty"`     // redacted evidence: never the secret itself
	Fingerprint string `json:"fingerprint,omitempty"` // keyed hash of the secret, to group incidents without storing it

	// Triage is the security team's verdict; the zero value until stored.
	Triage Triage `json:"triage"`
}

// Triage is where an incident stands in review.
type Triage struct {
	// State is one of TriageStates; "" reads as TriageNew when stored.
	State string    `json:"state"`
	Note  string    `json:"note,omitempty"`
	Actor string    `json:"actor,omitempty"`
	Time  time.Time `json:"time,omitzero"`
}

// Triage states of an incident.
const (
	TriageNew           = "new"
	TriageAcknowledged  = "acknowledged"
	TriageFalsePositive = "false-positive"
	TriageResolved      = "resolved"
)

// TriageStates lists the valid triage states.
var TriageStates = []string{TriageNew, TriageAcknowledged, TriageFalsePositive, TriageResolved}

// ValidTriage reports whether s is one of TriageStates.
func ValidTriage(s string) bool {
	for _, v := range TriageStates {
		if s == v {
			return true
		}
	}
	return false
}
