package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/sluice-egress/sluice/runs"
	"github.com/sluice-egress/sluice/store"
)

// scopedApprover approves an access request with a reviewer's scope:
// runs.Service.
type scopedApprover interface {
	ApproveScoped(ctx context.Context, d runs.Decision, sc runs.Scope) (runs.AccessRequest, error)
}

var _ scopedApprover = (*runs.Service)(nil)

// maxNote bounds a reviewer's note (the pages' constant is the same).
const maxReviewNote = 2000

// mountReviewAPI adds the review loop's endpoints: the live queue and
// scoped decisions.
func mountReviewAPI(r chi.Router, a *api) {
	r.Get("/access-requests/events", a.queueEvents)
	r.Post("/access-requests/{id}/review", a.review)
	r.Get("/incidents/{id}/trace", a.incidentTrace)
}

// reviewBody is POST /api/access-requests/{id}/review.
type reviewBody struct {
	Approve *bool  `json:"approve"`
	Note    string `json:"note"`
	// Scope is run, class or tenant; "" keeps the request's.
	Scope string `json:"scope"`
	// TTL ("24h") or Permanent (class or tenant scope only); neither keeps
	// the request's expiry.
	TTL       string `json:"ttl"`
	Permanent bool   `json:"permanent"`
	// Ports, Methods and Paths narrow the grant; absent keeps the request's.
	Ports   []int    `json:"ports"`
	Methods []string `json:"methods"`
	Paths   []string `json:"paths"`
}

func (a *api) review(w http.ResponseWriter, r *http.Request) {
	p := principal(r)
	id := chi.URLParam(r, "id")
	if _, err := a.visibleAccess(r.Context(), p, id); err != nil {
		a.fail(w, r, err)
		return
	}
	var b reviewBody
	if err := readJSON(w, r, maxBody, &b); err != nil {
		a.fail(w, r, err)
		return
	}
	if err := reviewAccess(r.Context(), a.o, p, id, b); err != nil {
		a.fail(w, r, err)
		return
	}
	x, err := a.o.Store.GetAccessRequest(r.Context(), id)
	a.respond(w, r, http.StatusOK, accessOut(x), err)
}

// reviewAccess decides a request for p (reviewer or admin) with b's scope.
func reviewAccess(ctx context.Context, o Options, p Principal, id string, b reviewBody) error {
	if !p.AtLeast(RoleReviewer) {
		return fmt.Errorf("%w: deciding access requests needs the reviewer role", errForbidden)
	}
	if b.Approve == nil {
		return fmt.Errorf("%w: approve (true or false) is required", ErrInvalid)
	}
	note := strings.TrimSpace(b.Note)
	if len(note) > maxReviewNote {
		return fmt.Errorf("%w: the note is longer than %d bytes", ErrInvalid, maxReviewNote)
	}
	d := runs.Decision{ID: id, Approve: *b.Approve, Reviewer: p.Name, Reason: note}
	if !*b.Approve {
		if note == "" {
			return fmt.Errorf("%w: a denial needs a note saying why", ErrInvalid)
		}
		return decideAccess(ctx, o, p, id, false, note)
	}
	sa, ok := o.Runs.(scopedApprover)
	if o.Runs == nil || !ok {
		return fmt.Errorf("%w: this server does not decide access requests", errUnavailable)
	}
	sc := runs.Scope{Scope: b.Scope, Permanent: b.Permanent, Ports: b.Ports, Methods: b.Methods, Paths: b.Paths}
	if b.TTL != "" {
		t, err := time.ParseDuration(b.TTL)
		if err != nil || t <= 0 || t > MaxAccessTTL {
			return fmt.Errorf("%w: ttl must be a duration such as 24h, at most %s", ErrInvalid, MaxAccessTTL)
		}
		if b.Permanent {
			return fmt.Errorf("%w: give ttl or permanent, not both", ErrInvalid)
		}
		sc.TTL = t
	}
	_, err := sa.ApproveScoped(ctx, d, sc)
	return err
}

// queueEvents streams the live queue (text/event-stream): one "access"
// event per request filed, joined or decided that the principal may see.
func (a *api) queueEvents(w http.ResponseWriter, r *http.Request) {
	p := principal(r)
	if !p.AtLeast(RoleViewer) && !p.AtLeast(RoleTenant) {
		a.fail(w, r, errForbidden)
		return
	}
	if a.o.Queue == nil {
		a.fail(w, r, fmt.Errorf("%w: this server has no live queue", errUnavailable))
		return
	}
	fl, ok := w.(http.Flusher)
	if !ok {
		a.fail(w, r, fmt.Errorf("%w: streaming is not supported here", errUnavailable))
		return
	}
	events, done, ok := a.o.Queue.subscribe()
	if !ok {
		a.fail(w, r, fmt.Errorf("%w: too many live queues are open", errUnavailable))
		return
	}
	defer done()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, "retry: 2000\n: live queue\n\n")
	fl.Flush()
	beat := time.NewTicker(15 * time.Second)
	defer beat.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-beat.C:
			fmt.Fprint(w, ": beat\n\n")
		case ev := <-events:
			if !p.SeesTenant(ev.Tenant) {
				continue
			}
			b, _ := json.Marshal(ev) // escapes <, > and & as \u00xx
			fmt.Fprintf(w, "event: access\ndata: %s\n\n", b)
		}
		fl.Flush()
	}
}

// QueueEventOf is the live queue's form of a request and its context.
func QueueEventOf(x store.AccessRequest, c store.AccessContext) QueueEvent {
	return QueueEvent{ID: x.ID, Tenant: x.Tenant, Class: c.Class, Run: c.Run, Host: x.Host, Ports: x.Ports,
		Methods: x.Methods, Paths: x.Paths, Justification: x.Justification, State: x.State, Scope: c.Scope,
		Joined: c.Joined, Held: c.Held, Incident: c.Incident, CreatedAt: x.CreatedAt, ExpiresAt: x.ExpiresAt}
}
