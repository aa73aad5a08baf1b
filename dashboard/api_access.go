package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/sluice-egress/sluice/rules"
	"github.com/sluice-egress/sluice/runs"
	"github.com/sluice-egress/sluice/store"
)

type accessJSON struct {
	ID            string    `json:"id"`
	Tenant        string    `json:"tenant"`
	Host          string    `json:"host"`
	Ports         []int     `json:"ports,omitempty"`
	Methods       []string  `json:"methods,omitempty"`
	Paths         []string  `json:"paths,omitempty"`
	Justification string    `json:"justification"`
	ExpiresAt     time.Time `json:"expires_at"`
	State         string    `json:"state"`
	Reviewer      string    `json:"reviewer,omitempty"`
	Reason        string    `json:"reason,omitempty"`
	CreatedAt     time.Time `json:"created_at"`
	DecidedAt     time.Time `json:"decided_at,omitzero"`
}

func accessOut(x store.AccessRequest) accessJSON {
	return accessJSON{ID: x.ID, Tenant: x.Tenant, Host: x.Host, Ports: x.Ports, Methods: x.Methods, Paths: x.Paths,
		Justification: x.Justification, ExpiresAt: x.ExpiresAt, State: x.State, Reviewer: x.Reviewer,
		Reason: x.Reason, CreatedAt: x.CreatedAt, DecidedAt: x.DecidedAt}
}

// accessBody is POST /api/access-requests.
type accessBody struct {
	Tenant        string    `json:"tenant"`
	Host          string    `json:"host"`
	Ports         []int     `json:"ports"`
	Methods       []string  `json:"methods"`
	Paths         []string  `json:"paths"`
	Justification string    `json:"justification"`
	ExpiresAt     time.Time `json:"expires_at"`
	TTL           string    `json:"ttl"`
}

func (a *api) createAccess(w http.ResponseWriter, r *http.Request) {
	p := principal(r)
	var b accessBody
	if err := readJSON(w, r, maxBody, &b); err != nil {
		a.fail(w, r, err)
		return
	}
	x, err := a.accessRequest(p, b)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	x, err = a.o.Store.CreateAccessRequest(r.Context(), x)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if _, err := a.o.Store.AppendAudit(r.Context(), store.AuditEntry{Actor: p.Name, Action: "access.requested",
		Tenant: x.Tenant, Target: x.ID, Detail: x.Host}); err != nil {
		a.o.logger().Error("api: audit", "action", "access.requested", "request", x.ID, "err", err)
	}
	w.Header().Set("Location", "/api/access-requests/"+x.ID)
	writeJSON(w, http.StatusCreated, accessOut(x))
}

// accessRequest checks who asks (a tenant for itself, or an admin on a tenant's
// behalf) and that the request could become a valid grant.
func (a *api) accessRequest(p Principal, b accessBody) (store.AccessRequest, error) {
	switch {
	case p.AtLeast(RoleAdmin):
	case p.AtLeast(RoleTenant):
		if b.Tenant == "" {
			b.Tenant = p.Tenant
		}
		if b.Tenant != p.Tenant {
			return store.AccessRequest{}, fmt.Errorf("%w: tenant %s may file requests only for itself", errForbidden, p.Tenant)
		}
	default:
		return store.AccessRequest{}, fmt.Errorf("%w: filing access requests needs a tenant token or the admin role", errForbidden)
	}
	if b.Tenant == "" {
		return store.AccessRequest{}, fmt.Errorf("%w: tenant is required", ErrInvalid)
	}
	if e := a.o.engine(); e != nil && !containsString(e.Tenants(), b.Tenant) {
		return store.AccessRequest{}, fmt.Errorf("%w: unknown tenant %q", ErrInvalid, b.Tenant)
	}
	b.Justification = strings.TrimSpace(b.Justification)
	if b.Justification == "" || len(b.Justification) > maxJustification {
		return store.AccessRequest{}, fmt.Errorf("%w: a justification is required (at most %d bytes)", ErrInvalid, maxJustification)
	}
	now := a.o.now()
	exp := b.ExpiresAt
	switch {
	case !exp.IsZero() && b.TTL != "":
		return store.AccessRequest{}, fmt.Errorf("%w: give expires_at or ttl, not both", ErrInvalid)
	case b.TTL != "":
		d, err := time.ParseDuration(b.TTL)
		if err != nil || d <= 0 {
			return store.AccessRequest{}, fmt.Errorf("%w: ttl must be a duration such as 24h", ErrInvalid)
		}
		exp = now.Add(d)
	case exp.IsZero():
		exp = now.Add(DefaultAccessTTL)
	}
	if !exp.After(now) || exp.Sub(now) > MaxAccessTTL {
		return store.AccessRequest{}, fmt.Errorf("%w: the expiry must be in the future and within %s", ErrInvalid, MaxAccessTTL)
	}
	x := store.AccessRequest{Tenant: b.Tenant, Host: strings.TrimSpace(b.Host), Ports: b.Ports, Methods: b.Methods,
		Paths: b.Paths, Justification: b.Justification, ExpiresAt: exp}
	if err := rules.CheckGrant(runs.GrantOf(runs.AccessRequest(x))); err != nil {
		return store.AccessRequest{}, fmt.Errorf("%w: %v", ErrInvalid, strings.TrimPrefix(err.Error(), "rules: "))
	}
	return x, nil
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func (a *api) listAccess(w http.ResponseWriter, r *http.Request) {
	tenant, limit, err := listQuery(r, 100)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	f := store.AccessFilter{Tenant: tenant, State: r.URL.Query().Get("state"), Limit: limit}
	xs, err := a.o.Store.ListAccessRequests(r.Context(), f)
	a.respond(w, r, http.StatusOK, struct {
		Requests []accessJSON `json:"requests"`
	}{Requests: jsonList(xs, accessOut)}, err)
}

func (a *api) visibleAccess(ctx context.Context, p Principal, id string) (store.AccessRequest, error) {
	x, err := a.o.Store.GetAccessRequest(ctx, id)
	return visibleTo(p, "access request", id, x, x.Tenant, err)
}

func (a *api) getAccess(w http.ResponseWriter, r *http.Request) {
	x, err := a.visibleAccess(r.Context(), principal(r), chi.URLParam(r, "id"))
	a.respond(w, r, http.StatusOK, accessOut(x), err)
}

func (a *api) decide(w http.ResponseWriter, r *http.Request) {
	p := principal(r)
	id := chi.URLParam(r, "id")
	if _, err := a.visibleAccess(r.Context(), p, id); err != nil {
		a.fail(w, r, err)
		return
	}
	var b struct {
		Approve *bool  `json:"approve"`
		Reason  string `json:"reason"`
	}
	if err := readJSON(w, r, maxBody, &b); err != nil {
		a.fail(w, r, err)
		return
	}
	if b.Approve == nil {
		a.fail(w, r, fmt.Errorf("%w: approve (true or false) is required", ErrInvalid))
		return
	}
	if err := decideAccess(r.Context(), a.o, p, id, *b.Approve, strings.TrimSpace(b.Reason)); err != nil {
		a.fail(w, r, err)
		return
	}
	x, err := a.o.Store.GetAccessRequest(r.Context(), id)
	a.respond(w, r, http.StatusOK, accessOut(x), err)
}

// decideAccess approves or denies a pending access request for p (reviewer or admin)
// through the runs service, which records the decision and applies the grants.
func decideAccess(ctx context.Context, o Options, p Principal, id string, approve bool, reason string) error {
	if !p.AtLeast(RoleReviewer) {
		return fmt.Errorf("%w: deciding access requests needs the reviewer role", errForbidden)
	}
	if o.Runs == nil {
		return fmt.Errorf("%w: this server does not decide access requests", errUnavailable)
	}
	_, err := o.Runs.DecideAccess(ctx, runs.Decision{ID: id, Approve: approve, Reviewer: p.Name, Reason: reason})
	return err
}
