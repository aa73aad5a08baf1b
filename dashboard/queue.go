package dashboard

import (
	"sync"
	"time"
)

// Queue carries access-request events to the dashboard's live queue
// (server-sent events): cmd publishes what the runs service files, joins
// and decides; every open page and API stream whose principal may see the
// tenant receives it. A slow subscriber misses events rather than slowing
// anyone (its page reloads the list when it reconnects). The zero value
// works.
type Queue struct {
	mu   sync.Mutex
	subs map[chan QueueEvent]struct{}
}

// QueueEvent is one change to an access request, as the live queue shows
// it. Every text field is attacker-influenced (a sandbox wrote the reason):
// pages insert them as text, never as markup.
type QueueEvent struct {
	ID            string    `json:"id"`
	Tenant        string    `json:"tenant"`
	Class         string    `json:"class,omitempty"`
	Run           string    `json:"run,omitempty"`
	Host          string    `json:"host"`
	Ports         []int     `json:"ports,omitempty"`
	Methods       []string  `json:"methods,omitempty"`
	Paths         []string  `json:"paths,omitempty"`
	Justification string    `json:"justification"`
	State         string    `json:"state"`
	Scope         string    `json:"scope,omitempty"`
	Joined        int       `json:"joined,omitempty"`
	Held          int       `json:"held,omitempty"`
	Incident      string    `json:"incident,omitempty"`
	CreatedAt     time.Time `json:"created_at"`
	ExpiresAt     time.Time `json:"expires_at"`
}

// maxQueueSubscribers bounds the open streams.
const maxQueueSubscribers = 256

// Publish hands ev to every subscriber that has room.
func (q *Queue) Publish(ev QueueEvent) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for c := range q.subs {
		select {
		case c <- ev:
		default:
		}
	}
}

// subscribe returns a channel of events and the function that ends it; ok is
// false when too many streams are open.
func (q *Queue) subscribe() (<-chan QueueEvent, func(), bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.subs == nil {
		q.subs = map[chan QueueEvent]struct{}{}
	}
	if len(q.subs) >= maxQueueSubscribers {
		return nil, nil, false
	}
	c := make(chan QueueEvent, 64)
	q.subs[c] = struct{}{}
	return c, func() {
		q.mu.Lock()
		delete(q.subs, c)
		q.mu.Unlock()
	}, true
}
