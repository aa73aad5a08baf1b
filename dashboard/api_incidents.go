package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/sluice-egress/sluice/incident"
	"github.com/sluice-egress/sluice/store"
)

// incidentJSON is an incident as the API shows it (redacted evidence and a
// fingerprint, never a secret) with its triage history.
type incidentJSON struct {
	incident.Incident
	History []triageChange `json:"history,omitempty"`
}

type triageChange struct {
	Time  time.Time `json:"time"`
	Actor string    `json:"actor"`
	From  string    `json:"from"`
	To    string    `json:"to"`
	Note  string    `json:"note,omitempty"`
}

func (a *api) listIncidents(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	tenant, err := scopeTenant(principal(r), q.Get("tenant"))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	f := store.IncidentFilter{Tenant: tenant, Run: q.Get("run"), Class: q.Get("class"), Kind: q.Get("kind"),
		Rule: q.Get("rule"), Action: q.Get("action"), Host: q.Get("host"), Triage: q.Get("triage"),
		Fingerprint: q.Get("fingerprint"), After: q.Get("after")}
	if f.Since, err = apiTime(q.Get("since"), "since"); err == nil {
		if f.Until, err = apiTime(q.Get("until"), "until"); err == nil {
			f.Limit, err = atoi(q.Get("limit"), "limit", 50)
		}
	}
	if err != nil {
		a.fail(w, r, err)
		return
	}
	page, err := a.o.Store.ListIncidents(r.Context(), f)
	if page.Incidents == nil {
		page.Incidents = []incident.Incident{} // [], not null
	}
	a.respond(w, r, http.StatusOK, struct {
		Incidents []incident.Incident `json:"incidents"`
		Next      string              `json:"next,omitempty"`
	}{Incidents: page.Incidents, Next: page.Next}, err)
}

// visibleIncident returns the incident if p may see it, else not-found.
func (a *api) visibleIncident(ctx context.Context, p Principal, id string) (incident.Incident, error) {
	in, err := a.o.Store.GetIncident(ctx, id)
	return visibleTo(p, "incident", id, in, in.Tenant, err)
}

func (a *api) getIncident(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	in, err := a.visibleIncident(r.Context(), principal(r), id)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	hist, err := a.o.Store.TriageHistory(r.Context(), id)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	out := incidentJSON{Incident: in}
	for _, c := range hist {
		out.History = append(out.History, triageChange{Time: c.Time, Actor: c.Actor, From: c.From, To: c.To, Note: c.Note})
	}
	writeJSON(w, http.StatusOK, out)
}

func (a *api) triage(w http.ResponseWriter, r *http.Request) {
	p := principal(r)
	id := chi.URLParam(r, "id")
	if _, err := a.visibleIncident(r.Context(), p, id); err != nil {
		a.fail(w, r, err)
		return
	}
	if !p.AtLeast(RoleReviewer) {
		a.fail(w, r, fmt.Errorf("%w: triage needs the reviewer role", errForbidden))
		return
	}
	var body struct {
		State string `json:"state"`
		Note  string `json:"note"`
	}
	if err := readJSON(w, r, maxBody, &body); err != nil {
		a.fail(w, r, err)
		return
	}
	in, err := a.o.Store.TriageIncident(r.Context(), id, store.TriageUpdate{State: body.State, Note: body.Note, Actor: p.Name})
	a.respond(w, r, http.StatusOK, in, err)
}
