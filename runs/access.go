package runs

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sluice-egress/sluice/rules"
)

// Bounds of an access request.
const (
	// DefaultAccessTTL and MaxAccessTTL bound an access request's (and its grant's) life.
	DefaultAccessTTL = 24 * time.Hour
	MaxAccessTTL     = 90 * 24 * time.Hour
	// MaxJustification bounds the tenant's reason, in bytes.
	MaxJustification = 2000
)

// AccessInput is a new access request as it is filed.
type AccessInput struct {
	Tenant, Host string
	Ports        []int
	Methods      []string
	Paths        []string
	// Justification is required.
	Justification string
	// ExpiresAt or TTL (a duration such as "24h"), not both; neither means
	// DefaultAccessTTL from Filed.
	ExpiresAt time.Time
	TTL       string
	// Actor is who files it, for the audit log; the caller checked that they
	// may file for Tenant.
	Actor string
	// Filed is when the request is filed; zero: now.
	Filed time.Time
}

// RequestAccess files a pending access request: a known tenant, a justification,
// an expiry in the future and within MaxAccessTTL, and an entry that could become
// a grant. It stores the request and records it in the audit log.
func (m *Service) RequestAccess(ctx context.Context, in AccessInput) (AccessRequest, error) {
	x, err := m.accessRequest(in)
	if err != nil {
		return AccessRequest{}, err
	}
	if x, err = m.Store.CreateAccessRequest(ctx, x); err != nil {
		return AccessRequest{}, err
	}
	m.audit(ctx, in.Actor, "access.requested", x.Tenant, x.ID, x.Host)
	return x, nil
}

func (m *Service) accessRequest(in AccessInput) (AccessRequest, error) {
	if in.Tenant == "" {
		return AccessRequest{}, fmt.Errorf("%w: tenant is required", ErrInvalid)
	}
	if e := m.engine(); e != nil && !slices.Contains(e.Tenants(), in.Tenant) {
		return AccessRequest{}, fmt.Errorf("%w: unknown tenant %q", ErrInvalid, in.Tenant)
	}
	just := strings.TrimSpace(in.Justification)
	if just == "" || len(just) > MaxJustification {
		return AccessRequest{}, fmt.Errorf("%w: a justification is required (at most %d bytes)", ErrInvalid, MaxJustification)
	}
	now := in.Filed
	if now.IsZero() {
		now = time.Now()
	}
	exp := in.ExpiresAt
	switch {
	case !exp.IsZero() && in.TTL != "":
		return AccessRequest{}, fmt.Errorf("%w: give expires_at or ttl, not both", ErrInvalid)
	case in.TTL != "":
		d, err := time.ParseDuration(in.TTL)
		if err != nil || d <= 0 {
			return AccessRequest{}, fmt.Errorf("%w: ttl must be a duration such as 24h", ErrInvalid)
		}
		exp = now.Add(d)
	case exp.IsZero():
		exp = now.Add(DefaultAccessTTL)
	}
	if !exp.After(now) || exp.Sub(now) > MaxAccessTTL {
		return AccessRequest{}, fmt.Errorf("%w: the expiry must be in the future and within %s", ErrInvalid, MaxAccessTTL)
	}
	x := AccessRequest{Tenant: in.Tenant, Host: strings.TrimSpace(in.Host), Ports: in.Ports, Methods: in.Methods,
		Paths: in.Paths, Justification: just, ExpiresAt: exp}
	if err := rules.CheckGrant(GrantOf(x)); err != nil {
		return AccessRequest{}, fmt.Errorf("%w: %v", ErrInvalid, strings.TrimPrefix(err.Error(), "rules: "))
	}
	return x, nil
}
