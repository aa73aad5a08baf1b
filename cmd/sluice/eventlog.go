package main

import (
	"context"
	"log/slog"
	"sync"

	"github.com/sluice-egress/sluice/gateway"
)

// eventLog is the in-process event sink until incidents are stored: it
// counts events by reason. The gateway logs each refusal itself.
type eventLog struct {
	Logger *slog.Logger

	mu     sync.Mutex
	counts map[string]int
}

var _ gateway.EventSink = (*eventLog)(nil)

func (l *eventLog) Emit(_ context.Context, e gateway.Event) string {
	l.mu.Lock()
	if l.counts == nil {
		l.counts = make(map[string]int)
	}
	l.counts[e.Reason]++
	l.mu.Unlock()
	return ""
}

// Counts returns a copy of the counts by reason.
func (l *eventLog) Counts() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]int, len(l.counts))
	for k, v := range l.counts {
		out[k] = v
	}
	return out
}
