package gateway

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/sluice-egress/sluice/incident"
	"github.com/sluice-egress/sluice/rules"
	"github.com/sluice-egress/sluice/scanner"
)

// Reasons the gateway itself gives for a refusal, besides the policy's own
// (rules.Reason*) and the scanner's (scanner.Reason*). They are sent in the
// Sluice-Reason header and counted.
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

// EventSink receives what the gateway refused, blocked or flagged, as
// incidents without an ID. Emit must not block for long: it is called on the
// request path. It returns the incident id when the event was recorded as
// one, or "".
type EventSink interface {
	Emit(ctx context.Context, in incident.Incident) (incidentID string)
}

// discardSink is used when Gateway.Events is nil.
type discardSink struct{}

func (discardSink) Emit(context.Context, incident.Incident) string { return "" }

// recordFinding is the one place a finding becomes an event: it emits the
// finding of r (for the run id, towards host:port) as an incident keeping
// path, logs it, and returns the incident id or "". The caller sets the
// finding's Action to what the gateway does with it.
func (g *Gateway) recordFinding(ctx context.Context, r *http.Request, id rules.Identity, host string, port int, path string, f scanner.Finding) string {
	reason, level := scanner.KindReason(f.Kind), slog.LevelInfo
	if f.Kind == KindCredential {
		// The gateway's own kind: the sandbox holds a real secret.
		reason, level = ReasonRealCredential, slog.LevelWarn
	}
	inc := g.events().Emit(ctx, incident.Incident{
		Time: time.Now(), Tenant: id.Tenant, Class: id.Class, Run: id.Run,
		Kind: f.Kind, Reason: reason, Action: f.Action.String(),
		Host: host, Port: port, Method: r.Method, Path: path, Client: r.RemoteAddr,
		Rule: f.Rule, Where: f.Where, Decoding: f.Decoding, Snippet: f.Snippet, Fingerprint: f.Fingerprint,
	})
	g.logger().Log(ctx, level, "finding", logTenant, id.Tenant, logClass, id.Class, logHost, host, logPort, port,
		"kind", f.Kind, "rule", f.Rule, "where", f.Where, "decoding", f.Decoding,
		"action", f.Action.String(), "fingerprint", f.Fingerprint, "incident", inc)
	return inc
}
