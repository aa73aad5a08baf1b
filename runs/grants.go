package runs

import (
	"context"
	"slices"
	"time"

	"github.com/sluice-egress/sluice/rules"
)

// GrantOf is the policy grant of an approved access request: its entry for every class
// of its tenant, until it expires.
func GrantOf(x AccessRequest) rules.Grant {
	return rules.Grant{ID: x.ID, Tenant: x.Tenant, Expires: x.ExpiresAt,
		Entry: rules.Entry{Host: x.Host, Ports: x.Ports, Methods: x.Methods, Paths: x.Paths}}
}

// Decision is a reviewer's answer to a pending access request.
type Decision struct {
	ID      string
	Approve bool
	// Reviewer is who decides (required); the caller checked that they may.
	Reviewer string
	Reason   string
}

// DecideAccess approves or denies a pending access request; the store records the
// decision in the audit log in the same transaction. Then the engine's grants are
// refreshed, so that an approval applies at once; a failed refresh is logged (the
// periodic refresh catches up) and the decision stands.
func (m *Service) DecideAccess(ctx context.Context, d Decision) (AccessRequest, error) {
	x, err := m.Store.DecideAccessRequest(ctx, d.ID, AccessDecision{Approve: d.Approve, Reviewer: d.Reviewer, Reason: d.Reason})
	if err != nil {
		return x, err
	}
	m.logger().Info("access request decided", "request", d.ID, "tenant", x.Tenant, "state", x.State, "reviewer", d.Reviewer)
	if err := m.RefreshGrants(context.WithoutCancel(ctx)); err != nil {
		m.logger().Error("grants not refreshed after a decision: the periodic refresh will apply it", "request", d.ID, "err", err)
	}
	// Held connections waiting on it go on (or get their 403) at once.
	m.wakeHeld(x.ID)
	if m.OnAccess != nil && m.Review != nil {
		if c, err := m.Review.GetAccessContext(context.WithoutCancel(ctx), x.ID); err == nil {
			m.OnAccess(x, c)
		}
	}
	return x, nil
}

// RefreshGrants installs the store's approved, unexpired access requests as the
// engine's grants, after marking expired requests. When a grant went away, open
// tunnels are re-checked so that those it opened close.
func (m *Service) RefreshGrants(ctx context.Context) error {
	now := time.Now()
	if _, err := m.Store.ExpireAccessRequests(ctx, now); err != nil {
		return err
	}
	xs, err := m.Store.ActiveGrants(ctx, now)
	if err != nil {
		return err
	}
	ids := make([]string, 0, len(xs))
	var first time.Time
	for _, x := range xs {
		ids = append(ids, x.ID)
		if first.IsZero() || x.ExpiresAt.Before(first) {
			first = x.ExpiresAt
		}
	}
	var scopes map[string]AccessContext
	if m.Review != nil {
		if scopes, err = m.Review.AccessContexts(ctx, ids); err != nil {
			return err
		}
	}
	gs := make([]rules.Grant, 0, len(xs))
	for _, x := range xs {
		c, ok := scopes[x.ID]
		gs = append(gs, grantScoped(x, c, ok))
	}
	slices.Sort(ids)
	m.mu.Lock()
	defer m.mu.Unlock()
	if !first.Equal(m.grantExpiry) {
		m.grantExpiry = first
		m.poke()
	}
	if e := m.engine(); e != nil {
		if err := e.SetGrants(gs); err != nil {
			m.logger().Error("some grants were not installed", "err", err)
		}
	}
	gone := false
	for _, id := range m.grants {
		if _, found := slices.BinarySearch(ids, id); !found {
			gone = true
			break
		}
	}
	if !slices.Equal(ids, m.grants) {
		m.logger().Info("grants refreshed", "count", len(ids))
	}
	m.grants = ids
	if gone {
		if gw := m.gateway(); gw != nil {
			if n := gw.PolicyChanged(); n > 0 {
				m.logger().Info("tunnels closed: a grant ended", "count", n)
			}
		}
	}
	return nil
}
