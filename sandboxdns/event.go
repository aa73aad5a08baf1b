package sandboxdns

import (
	"context"
	"time"
)

// Kind is the Kind of every event this package emits.
const Kind = "dns"

// ActionBlock is the Action of every event: a query is only ever refused or answered, and
// answers are not events.
const ActionBlock = "block"

// Reasons a query is refused, as events and the Extended DNS Error text carry them.
const (
	// ReasonUnknownSource: the source address belongs to no registered sandbox.
	ReasonUnknownSource = "unknown-source"
	// ReasonRateLimited: the source sent more queries than its rate allows.
	ReasonRateLimited = "rate-limited"
	// ReasonBadName: the name does not parse as a host name (escapes, the root, too long).
	ReasonBadName = "bad-name"
	// ReasonClassRefused: a class other than IN (CHAOS version.bind and the like).
	ReasonClassRefused = "class-refused"
	// ReasonTypeRefused: ANY, zone transfers and mailbox queries are never answered.
	ReasonTypeRefused = "type-refused"
	// ReasonDataInName: a label looks like data (the scanner's host-label findings).
	ReasonDataInName = "data-in-name"
	// ReasonNotServed: explicit-proxy mode answers the gateway's own names only.
	ReasonNotServed = "name-not-served"
	// ReasonHostNotAllowed is the reason of a policy refusal that gave none.
	ReasonHostNotAllowed = "host-not-allowed"
)

// Event is one refused query, with the fields the gateway's events have. It never holds a
// name that looks like data: Host is redacted label by label.
type Event struct {
	Time time.Time
	// Kind is always "dns".
	Kind string
	// Reason is one of the Reason constants or the policy's own reason.
	Reason string
	// Action is always "block".
	Action string
	// Tenant, Class and Run are the source's identity; all empty for an unknown source.
	Tenant, Class, Run string
	// Host is the queried name, lower case without the trailing dot, with every label
	// that looks like data replaced by "{redacted}".
	Host string
	// QType is the query type, e.g. "A", "TXT", "AXFR".
	QType string
	// Client is the query's source address and port.
	Client string
	// Rule is the detection rule of a data-in-name finding, "" otherwise.
	Rule string
	// Suppressed is how many refusals of this source went unrecorded since its previous
	// event, because of Server.EventsPerSecond.
	Suppressed int64
}

// EventSink receives the resolver's events. Emit is called on the query path and must not
// block for long; events are already limited per source (Server.EventsPerSecond).
type EventSink interface {
	Emit(ctx context.Context, e Event)
}

// EventSinkFunc adapts a function to EventSink.
type EventSinkFunc func(ctx context.Context, e Event)

// Emit calls f.
func (f EventSinkFunc) Emit(ctx context.Context, e Event) { f(ctx, e) }

// discard is the sink when Server.Events is nil.
type discard struct{}

func (discard) Emit(context.Context, Event) {}
