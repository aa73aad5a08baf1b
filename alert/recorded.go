package alert

import (
	"context"

	"github.com/sluice-egress/sluice/incident"
)

// Recorder is the event sink that stores incidents (the gateway's EventSink):
// Emit returns the stored incident's id, "" when nothing was stored, and an error
// when the store could not take it in time.
type Recorder interface {
	Emit(ctx context.Context, e incident.Incident) (string, error)
}

// Recorded is a Recorder that alerts what Inner recorded: an incident is alerted
// only once it is stored, and with its id.
type Recorded struct {
	// Inner records the incident (required).
	Inner Recorder
	// Alerts sends what Inner recorded (required).
	Alerts *Sink
}

// Emit records e with Inner, then alerts it as the store keeps it (query-less,
// clipped) when it was stored.
func (k *Recorded) Emit(ctx context.Context, e incident.Incident) (string, error) {
	id, err := k.Inner.Emit(ctx, e)
	if id != "" {
		in := e.Bounded()
		in.ID = id
		k.Alerts.Alert(in)
	}
	return id, err
}
