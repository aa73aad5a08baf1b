package gateway

import (
	"context"
	"net/http"
	"strings"

	"github.com/sluice-egress/sluice/incident"
	"github.com/sluice-egress/sluice/rules"
	"github.com/sluice-egress/sluice/scanner"
)

// HostScanner finds data in the labels of a destination host that a
// wildcard entry matched. A Scanner that also implements it (as
// *scanner.Scanner does) has every allowed host checked before anything
// resolves it. An error means the name was not checked: it is refused.
type HostScanner interface {
	ScanHost(ctx context.Context, tenant, host string, wildcardLabels int) (*scanner.Result, error)
}

var _ HostScanner = (*scanner.Scanner)(nil)

// ReasonExfilHostname is sent when the host name itself carries data.
const ReasonExfilHostname = scanner.ReasonExfilHost

// scanHost checks the host of an allowed CONNECT or plain request, before
// it is dialled (so before any resolver sees the name): the labels that the
// allowing entry's "*." matched are scanned. rawHost is the client's
// spelling, whose case base64 labels need. It reports false when it has
// refused the request itself.
func (g *Gateway) scanHost(w http.ResponseWriter, r *http.Request, id rules.Identity, d rules.Decision, rawHost, host string, port int) bool {
	hs, ok := g.Scanner.(HostScanner)
	n := wildcardLabels(d.Entry, host)
	if !ok || n == 0 {
		return true
	}
	spelled := strings.TrimSuffix(rawHost, ".")
	if !strings.EqualFold(spelled, host) {
		spelled = host // an IDN or other respelling: its labels are the normalised ones
	}
	res, err := hs.ScanHost(r.Context(), id.Tenant, spelled, n)
	if err != nil {
		g.logger().Warn("host scan failed", logTenant, id.Tenant, logErr, err)
		g.refuse(w, r, refusal{id: id, status: http.StatusServiceUnavailable, reason: ReasonScanFailed,
			port: port, host: incident.RedactHostLabels(host, n), msg: "the host name could not be checked; nothing was forwarded"})
		return false
	}
	incidentID := ""
	var recErr error
	for _, f := range res.Findings {
		// The name is the evidence: events and logs get it with the
		// wildcard part masked (f.Host), never in full.
		inc, err := g.recordFinding(r.Context(), r, id, f.Host, port, "", f)
		if incidentID == "" && f.Action == res.Verdict {
			incidentID = inc
		}
		if err != nil {
			recErr = err
		}
	}
	// A name cannot be redacted: a redaction refuses it like a block.
	if res.Verdict < scanner.Redact {
		if recErr != nil {
			// An alert nobody can see is no alert: nothing goes on unrecorded.
			g.unrecorded(w, id, incident.RedactHostLabels(host, n))
			return false
		}
		return true
	}
	reason := ReasonExfilHostname
	if res.Reason == scanner.ReasonCanary || res.Reason == scanner.ReasonPhantom {
		reason = res.Reason
	}
	writeRefusal(w, http.StatusForbidden, reason, incidentID,
		"the host name carries what policy forbids sending; it was not resolved and nothing was forwarded")
	return false
}

// wildcardLabels is how many leftmost labels of host the entry's "*."
// matched: 0 for an exact entry, an IP literal or no entry.
func wildcardLabels(e *rules.Entry, host string) int {
	if e == nil {
		return 0
	}
	suffix, ok := strings.CutPrefix(strings.ToLower(e.Host), "*.")
	if !ok || !strings.HasSuffix(host, "."+suffix) {
		return 0
	}
	return strings.Count(strings.TrimSuffix(host, "."+suffix), ".") + 1
}
