package dashboard

import (
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/sluice-egress/sluice/store"
)

// The review page is the live queue of pending access requests: the ones
// pending when it loads, then every request filed, joined or decided as it
// happens (server-sent events from /api/access-requests/events, inserted as
// text by /static/review.js), with a reviewer's scoped approve and deny.

func mountReviewPages(r chi.Router, p *pages) {
	r.Get("/review", p.reviewQueue)
	r.Get("/policy/propose", p.propose)
	r.With(require(RoleReviewer)).Post("/review/{id}", p.reviewDecide)
}

type reviewRow struct {
	X store.AccessRequest
	C store.AccessContext
}

type reviewData struct {
	Rows []reviewRow
	Live bool
}

func (p *pages) reviewQueue(w http.ResponseWriter, r *http.Request) {
	xs, err := p.o.Store.ListAccessRequests(r.Context(), store.AccessFilter{State: store.AccessPending, Limit: 500})
	if err != nil {
		p.fail(w, r, err)
		return
	}
	ids := make([]string, len(xs))
	for i, x := range xs {
		ids[i] = x.ID
	}
	cs, err := p.o.Store.AccessContexts(r.Context(), ids)
	if err != nil {
		p.fail(w, r, err)
		return
	}
	d := reviewData{Live: p.o.Queue != nil}
	for _, x := range xs {
		c := cs[x.ID]
		c.ID = x.ID
		d.Rows = append(d.Rows, reviewRow{X: x, C: c})
	}
	p.render(w, r, http.StatusOK, "review", "Review", d)
}

func (p *pages) reviewDecide(w http.ResponseWriter, r *http.Request) {
	pr, _ := PrincipalFrom(r.Context())
	id := chi.URLParam(r, "id")
	x, err := p.o.Store.GetAccessRequest(r.Context(), id)
	if err == nil && !pr.SeesTenant(x.Tenant) {
		err = hidden("access request", id)
	}
	if err != nil {
		p.fail(w, r, err)
		return
	}
	approve := r.PostFormValue("decision") == "approve"
	b := reviewBody{Approve: &approve, Note: r.PostFormValue("note"), Scope: r.PostFormValue("scope"),
		TTL: strings.TrimSpace(r.PostFormValue("ttl")), Permanent: r.PostFormValue("permanent") == "on"}
	if m := strings.Fields(strings.ReplaceAll(r.PostFormValue("methods"), ",", " ")); len(m) > 0 {
		b.Methods = m
	}
	if ps := strings.Fields(r.PostFormValue("paths")); len(ps) > 0 {
		b.Paths = ps
	}
	if b.Permanent {
		b.TTL = ""
	}
	if err := reviewAccess(r.Context(), p.o, pr, id, b); err != nil {
		code, show := statusOf(err)
		if !show {
			p.fail(w, r, err)
			return
		}
		p.render(w, r, code, "error", http.StatusText(code), strings.TrimPrefix(err.Error(), "store: "))
		return
	}
	http.Redirect(w, r, "/review", http.StatusSeeOther)
}

func init() {
	// dict builds a template's argument from pairs: (dict "ID" .X.ID "CSRF" $.CSRF).
	funcs["dict"] = func(kv ...any) map[string]any {
		m := make(map[string]any, len(kv)/2)
		for i := 0; i+1 < len(kv); i += 2 {
			if k, ok := kv[i].(string); ok {
				m[k] = kv[i+1]
			}
		}
		return m
	}
}
