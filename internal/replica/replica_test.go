package replica

import (
	"errors"
	"testing"

	"github.com/sluice-egress/sluice/gateway"
	"github.com/sluice-egress/sluice/rules"
)

func TestMajority(t *testing.T) {
	tests := []struct {
		name    string
		count   map[string]int
		mine    string
		top     string
		differs bool
	}{
		{"alone", map[string]int{"a": 1}, "a", "a", false},
		{"with the majority", map[string]int{"a": 2, "b": 1}, "a", "a", false},
		{"behind", map[string]int{"a": 2, "b": 1}, "b", "a", true},
		{"a tie agrees", map[string]int{"a": 1, "b": 1}, "b", "b", false},
		{"behind a tie: the smallest", map[string]int{"a": 2, "b": 2, "c": 1}, "c", "a", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			top, differs := majority(tc.count, tc.mine)
			if top != tc.top || differs != tc.differs {
				t.Fatalf("majority = %q, %v; want %q, %v", top, differs, tc.top, tc.differs)
			}
		})
	}
}

type identifyFn struct {
	gateway.Policy
	fn func(user, token string) (rules.Identity, error)
}

func (p identifyFn) Identify(user, token string) (rules.Identity, error) { return p.fn(user, token) }

// An unknown token is looked up once, then identified again; a known or an
// empty one is never looked up.
func TestPeerPolicy(t *testing.T) {
	known := map[string]bool{"known": true}
	lookups := 0
	p := &PeerPolicy{
		Policy: identifyFn{fn: func(user, token string) (rules.Identity, error) {
			if known[token] {
				return rules.Identity{Tenant: user}, nil
			}
			return rules.Identity{}, errors.New("unknown")
		}},
		Lookup: func(token string) bool { lookups++; known[token] = token == "peer"; return known[token] },
	}
	if _, err := p.Identify("acme", "known"); err != nil || lookups != 0 {
		t.Fatalf("known token: %v, %d lookups", err, lookups)
	}
	if _, err := p.Identify("acme", ""); err == nil || lookups != 0 {
		t.Fatalf("empty token: %v, %d lookups", err, lookups)
	}
	if id, err := p.Identify("acme", "peer"); err != nil || id.Tenant != "acme" || lookups != 1 {
		t.Fatalf("a peer's run: %v %v, %d lookups", id, err, lookups)
	}
	if _, err := p.Identify("acme", "nobody"); err == nil {
		t.Fatal("a token nobody has was identified")
	}
}
