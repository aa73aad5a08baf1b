package rules

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
)

// ErrRunEnded is wrapped by Identify for the token of a run that ended (removed or
// expired): the client learns that its run is over (Sluice-Reason run-ended), which its
// token already told it was once valid, and nothing else. The error wraps
// ErrUnauthenticated too: whoever only checks that still refuses it.
var ErrRunEnded = errors.New("run ended")

var errRunEnded = fmt.Errorf("rules: identify: %w: %w", ErrUnauthenticated, ErrRunEnded)

// ErrClassNotForToken is wrapped by Identify when the tenant token names a class
// outside the tenant's token_classes: the client holds the right token (so it learns
// nothing new) but must use a run token for that class. It wraps ErrUnauthenticated
// too, and Identify's Identity then names the class that was refused.
var ErrClassNotForToken = errors.New("class not selectable with the tenant token")

var errClassNotForToken = fmt.Errorf("rules: identify: %w: %w", ErrUnauthenticated, ErrClassNotForToken)

// maxEndedRuns bounds the removed runs whose tokens are remembered: past it the
// oldest are forgotten, and their tokens get the plain authentication failure.
const maxEndedRuns = 4096

// endedRuns remembers the token hashes of removed runs, so that Identify can say
// run-ended rather than that the credentials are wrong.
type endedRuns struct {
	mu     sync.Mutex
	byHash map[[sha256.Size]byte]Identity
	order  [][sha256.Size]byte
}

func (er *endedRuns) add(r *liveRun) {
	er.mu.Lock()
	defer er.mu.Unlock()
	if er.byHash == nil {
		er.byHash = map[[sha256.Size]byte]Identity{}
	}
	if _, ok := er.byHash[r.hash]; ok {
		return
	}
	if len(er.order) >= maxEndedRuns {
		delete(er.byHash, er.order[0])
		er.order = er.order[1:]
	}
	er.byHash[r.hash] = Identity{Tenant: r.tenant, Class: r.class, Run: r.id}
	er.order = append(er.order, r.hash)
}

func (er *endedRuns) get(h [sha256.Size]byte) (Identity, bool) {
	er.mu.Lock()
	defer er.mu.Unlock()
	id, ok := er.byHash[h]
	return id, ok
}

// endedIdentity is Identify's answer for a run token whose run ended: the run's
// identity and errRunEnded when user names the run's tenant (and class, if any).
func endedIdentity(id Identity, tn, cn string, hasClass bool) (Identity, error) {
	if id.Tenant != tn || (hasClass && cn != id.Class) {
		return Identity{}, errIdentify
	}
	return id, errRunEnded
}
