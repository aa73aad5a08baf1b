package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/sluice-egress/sluice/store"
)

// incidentJSON is an incident as the API shows it: redacted evidence and a
// fingerprint, never a secret.
type incidentJSON struct {
	ID          string         `json:"id"`
	Time        time.Time      `json:"time"`
	Tenant      string         `json:"tenant"`
	Class       string         `json:"class,omitempty"`
	Run         string         `json:"run,omitempty"`
	Kind        string         `json:"kind"`
	Reason      string         `json:"reason"`
	Action      string         `json:"action"`
	Host        string         `json:"host"`
	Port        int            `json:"port,omitempty"`
	Method      string         `json:"method,omitempty"`
	Path        string         `json:"path,omitempty"`
	Client      string         `json:"client,omitempty"`
	Rule        string         `json:"rule,omitempty"`
	Where       string         `json:"where,omitempty"`
	Decoding    string         `json:"decoding,omitempty"`
	Snippet     string         `json:"snippet,omitempty"`
	Fingerprint string         `json:"fingerprint,omitempty"`
	Triage      triageJSON     `json:"triage"`
	History     []triageChange `json:"history,omitempty"`
}

type triageJSON struct {
	State string    `json:"state"`
	Note  string    `json:"note,omitempty"`
	Actor string    `json:"actor,omitempty"`
	Time  time.Time `json:"time,omitzero"`
}

type triageChange struct {
	Time  time.Time `json:"time"`
	Actor string    `json:"actor"`
	From  string    `json:"from"`
	To    string    `json:"to"`
	Note  string    `json:"note,omitempty"`
}

func incidentOut(in store.Incident) incidentJSON {
	return incidentJSON{ID: in.ID, Time: in.Time, Tenant: in.Tenant, Class: in.Class, Run: in.Run, Kind: in.Kind,
		Reason: in.Reason, Action: in.Action, Host: in.Host, Port: in.Port, Method: in.Method, Path: in.Path,
		Client: in.Client, Rule: in.Rule, Where: in.Where, Decoding: in.Decoding, Snippet: in.Snippet,
		Fingerprint: in.Fingerprint,
		Triage:      triageJSON{State: in.Triage, Note: in.TriageNote, Actor: in.TriageActor, Time: in.TriageTime}}
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
	a.respond(w, r, http.StatusOK, struct {
		Incidents []incidentJSON `json:"incidents"`
		Next      string         `json:"next,omitempty"`
	}{Incidents: jsonList(page.Incidents, incidentOut), Next: page.Next}, err)
}

// visibleIncident returns the incident if p may see it, else not-found.
func (a *api) visibleIncident(ctx context.Context, p Principal, id string) (store.Incident, error) {
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
	out := incidentOut(in)
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
	a.respond(w, r, http.StatusOK, incidentOut(in), err)
}
