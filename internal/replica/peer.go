package replica

import (
	"errors"

	"github.com/sluice-egress/sluice/gateway"
	"github.com/sluice-egress/sluice/rules"
)

// PeerPolicy is the gateway's Policy on a replica: a token that identifies
// nobody may belong to a run a peer created a moment ago, so Lookup (bounded
// in time, as runs.Service.LookupToken is) asks the store before the client
// is refused.
type PeerPolicy struct {
	gateway.Policy
	// Lookup registers the run of token, if the store has one.
	Lookup func(token string) bool
}

// Identify identifies as Policy does, after a Lookup for an unknown token.
func (p *PeerPolicy) Identify(user, token string) (rules.Identity, error) {
	id, err := p.Policy.Identify(user, token)
	if err == nil || token == "" || errors.Is(err, rules.ErrRunEnded) || errors.Is(err, rules.ErrClassNotForToken) {
		// Known to this replica already: nothing a lookup could add.
		return id, err
	}
	// Asked again whatever the lookup says: the peer's notice may have
	// registered the run while the lookup ran (and made its own fail).
	p.Lookup(token)
	return p.Policy.Identify(user, token)
}
