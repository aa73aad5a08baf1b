package sandboxdns

import (
	"fmt"
	"net/netip"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/time/rate"
)

// source is what the server keeps per source address.
type source struct {
	queries *rate.Limiter
	events  *rate.Limiter
	// suppressed counts refusals not recorded since the last event, so that the next
	// event can say how many it stands for.
	suppressed atomic.Int64
}

// limiters holds a bounded set of sources, least recently seen forgotten first. A
// forgotten source starts again with a full burst, which bounds what forgetting can give a
// flood of spoofed addresses: one burst per address, the same as a new sandbox gets.
type limiters struct {
	cache              *lru.Cache[netip.Addr, *source]
	qps, eps           rate.Limit
	burst, eventsBurst int
}

func newLimiters(size int, qps float64, burst int, eps float64, eventsBurst int) (*limiters, error) {
	c, err := lru.New[netip.Addr, *source](size)
	if err != nil {
		return nil, fmt.Errorf("sandboxdns: limiters: %w", err)
	}
	return &limiters{cache: c, qps: rate.Limit(qps), burst: burst, eps: rate.Limit(eps), eventsBurst: eventsBurst}, nil
}

// get returns a's limiters, made on first sight.
func (l *limiters) get(a netip.Addr) *source {
	if s, ok := l.cache.Get(a); ok {
		return s
	}
	s := &source{queries: rate.NewLimiter(l.qps, l.burst), events: rate.NewLimiter(l.eps, l.eventsBurst)}
	// Two first queries at once may both make one: the loser's is dropped, and its one
	// query was counted against a fresh burst, which is what a new source gets anyway.
	if prev, ok, _ := l.cache.PeekOrAdd(a, s); ok {
		return prev
	}
	return s
}

// allowQuery reports whether a may send one more query at t.
func (s *source) allowQuery(t time.Time) bool { return s.queries.AllowN(t, 1) }

// allowEvent reports whether one more refusal of a may be recorded at t, and if so how
// many refusals before it were not.
func (s *source) allowEvent(t time.Time) (ok bool, suppressed int64) {
	if !s.events.AllowN(t, 1) {
		s.suppressed.Add(1)
		return false, 0
	}
	return true, s.suppressed.Swap(0)
}
