package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

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
	in, err := accessInput(p, b)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if a.o.Runs == nil {
		a.fail(w, r, fmt.Errorf("%w: this server does not take access requests", errUnavailable))
		return
	}
	in.Filed = a.o.now()
	rx, err := a.o.Runs.RequestAccess(r.Context(), in)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	x := store.AccessRequest(rx)
	w.Header().Set("Location", "/api/access-requests/"+x.ID)
	writeJSON(w, http.StatusCreated, accessOut(x))
}

// accessInput checks who asks (a tenant for itself, or an admin on a tenant's
// behalf); the runs service checks the request itself.
func accessInput(p Principal, b accessBody) (runs.AccessInput, error) {
	tenant, err := actingFor(p, b.Tenant, "file requests", "filing access requests")
	if err != nil {
		return runs.AccessInput{}, err
	}
	return runs.AccessInput{Tenant: tenant, Host: b.Host, Ports: b.Ports, Methods: b.Methods, Paths: b.Paths,
		Justification: b.Justification, ExpiresAt: b.ExpiresAt, TTL: b.TTL, Actor: p.Name}, nil
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
