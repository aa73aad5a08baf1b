package incidentsink

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// probeBudget bounds how many tagged probe refusals (sluice doctor's) per tenant go
// unstored. The tag is a header anyone can send: without a bound, an agent could tag
// every denied attempt and keep it out of the incident list. A doctor run makes a
// few dozen; beyond the budget a tagged refusal is an incident like any other.
type probeBudget struct {
	mu  sync.Mutex
	per map[string]*rate.Limiter
}

// Budget: a doctor run's worth at once, refilled over ten minutes.
const (
	probeBurst  = 60
	probeRefill = 10 * time.Minute
)

// skip reports whether one more probe refusal of tenant may go unstored.
func (b *probeBudget) skip(tenant string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.per == nil {
		b.per = map[string]*rate.Limiter{}
	}
	l := b.per[tenant]
	if l == nil {
		l = rate.NewLimiter(rate.Every(probeRefill/probeBurst), probeBurst)
		b.per[tenant] = l // tenants are few and configured: the map stays small
	}
	return l.Allow()
}
