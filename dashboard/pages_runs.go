package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/sluice-egress/sluice/incident"
	"github.com/sluice-egress/sluice/rules"
	"github.com/sluice-egress/sluice/runs"
	"github.com/sluice-egress/sluice/store"
)

type runRow struct {
	runJSON
	Incidents int64
}

type runsData struct {
	Runs []runRow
	All  bool
}

// runsPage lists the live runs (or all, newest first) with their incident counts.
func (p *pages) runsPage(w http.ResponseWriter, r *http.Request) {
	tenant, err := pageTenant(r, r.URL.Query().Get("tenant"))
	if err != nil {
		p.fail(w, r, err)
		return
	}
	d := runsData{All: r.URL.Query().Get("state") == "all"}
	rs, err := p.o.Store.ListRuns(r.Context(), store.RunFilter{Tenant: tenant, Active: !d.All, Limit: 200})
	if err != nil {
		p.fail(w, r, err)
		return
	}
	pr, now := principal(r), p.o.now()
	for _, run := range rs {
		if !pr.SeesTenant(run.Tenant) {
			continue
		}
		n, err := p.o.Store.CountIncidents(r.Context(), store.IncidentFilter{Run: run.ID})
		if err != nil {
			p.fail(w, r, err)
			return
		}
		d.Runs = append(d.Runs, runRow{runJSON: runOut(run, now), Incidents: n})
	}
	p.render(w, r, http.StatusOK, "runs", "Runs", d)
}

type runData struct {
	Run runJSON
	// Entries are the run's own entries in force, with their origins.
	Entries   []policyEntry
	Manifests string
	Extra     string
	Kinds     []store.KeyCount
	Incidents []incident.Incident
	Grants    []store.AccessRequest
	CanEnd    bool
}

// runPage shows one run: its class, declared manifests and entries, the
// tenant's grants in force, and its incidents. Another tenant's run is not found.
func (p *pages) runPage(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	run, err := p.o.Store.GetRun(r.Context(), id)
	pr := principal(r)
	if err == nil && !pr.SeesTenant(run.Tenant) {
		err = hidden("run", id)
	}
	if err != nil {
		p.fail(w, r, err)
		return
	}
	d := runData{Run: runOut(run, p.o.now()), Manifests: string(run.Manifests), Extra: string(run.Extra)}
	d.CanEnd = d.Run.Active && pr.AtLeast(RoleAdmin) && p.o.Runs != nil
	if e := p.o.engine(); e != nil {
		d.Entries = runEntries(e, id)
	}
	f := store.IncidentFilter{Run: id}
	if d.Kinds, err = p.o.Store.Choices(r.Context(), f, "kind", 20); err != nil {
		p.fail(w, r, err)
		return
	}
	f.Limit = 20
	page, err := p.o.Store.ListIncidents(r.Context(), f)
	if err != nil {
		p.fail(w, r, err)
		return
	}
	d.Incidents = page.Incidents
	if d.Grants, err = p.o.Store.ListAccessRequests(r.Context(), store.AccessFilter{Tenant: run.Tenant, State: store.AccessApproved}); err != nil {
		p.fail(w, r, err)
		return
	}
	p.render(w, r, http.StatusOK, "run", "Run "+id, d)
}

func (p *pages) endRun(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	pr := principal(r)
	run, err := p.o.Store.GetRun(r.Context(), id)
	if err == nil && !pr.SeesTenant(run.Tenant) {
		err = hidden("run", id)
	}
	if err == nil && p.o.Runs == nil {
		err = fmt.Errorf("%w: this server does not manage runs", errUnavailable)
	}
	if err == nil {
		_, err = p.o.Runs.EndRun(r.Context(), id, pr.Name)
	}
	if err != nil {
		p.failAPI(w, r, err)
		return
	}
	p.logger().Info("dashboard: run ended", "run", id, "actor", pr.Name)
	http.Redirect(w, r, "/runs/"+url.PathEscape(id), http.StatusSeeOther)
}

// requestAccess files an access request for a deny incident's host, for
// its tenant, with the incident named in the justification; it then waits
// on the access page for a decision like any other.
func (p *pages) requestAccess(w http.ResponseWriter, r *http.Request) {
	in, err := p.getIncident(r)
	if err != nil {
		p.fail(w, r, err)
		return
	}
	pr := principal(r)
	why := strings.TrimSpace(r.PostFormValue("justification"))
	if why == "" || len(why) > maxNote {
		p.fail(w, r, fmt.Errorf("%w: a request needs a justification (at most %d bytes)", errBadInput, maxNote))
		return
	}
	if in.Kind != "deny" || in.Host == "" {
		p.fail(w, r, fmt.Errorf("%w: only a refused host can be requested", errBadInput))
		return
	}
	if p.o.Runs == nil {
		p.failAPI(w, r, fmt.Errorf("%w: this server does not file access requests", errUnavailable))
		return
	}
	ai := accessInputFor(in, why, r.PostFormValue("ttl"), pr.Name)
	if _, err := p.o.Runs.RequestAccess(r.Context(), ai); err != nil {
		p.failAPI(w, r, err)
		return
	}
	http.Redirect(w, r, "/access?state="+url.QueryEscape(store.AccessPending), http.StatusSeeOther)
}

// failAPI shows an error the API's table of errors knows with its status
// and text, anything else as p.fail does.
func (p *pages) failAPI(w http.ResponseWriter, r *http.Request, err error) {
	code, show := statusOf(err)
	if !show {
		p.fail(w, r, err)
		return
	}
	p.render(w, r, code, "error", http.StatusText(code), strings.TrimPrefix(err.Error(), "store: "))
}

// accessInputFor is the request a deny incident prefills: its tenant,
// host and port, the method and path left open (the reviewer narrows them).
func accessInputFor(in incident.Incident, why, ttl, actor string) runs.AccessInput {
	ai := runs.AccessInput{Tenant: in.Tenant, Host: in.Host, TTL: ttl, Actor: actor,
		Justification: why + " (refused in incident " + in.ID + ")"}
	if in.Port != 0 {
		ai.Ports = []int{in.Port}
	}
	return ai
}

// exfilLink is an exfil link's destination and the part that carried data.
type exfilLink struct{ Host, Part string }

// exfilParts reads them from an exfil-link incident's redacted snippet
// ("https://host/… (query, ht…)", scanner.linkFinding's form).
func exfilParts(in incident.Incident) exfilLink {
	if in.Kind != "exfil-link" {
		return exfilLink{}
	}
	_, rest, ok := strings.Cut(in.Snippet, "://")
	if !ok {
		return exfilLink{}
	}
	host, rest, _ := strings.Cut(rest, "/")
	var l exfilLink
	l.Host = host
	if _, why, ok := strings.Cut(rest, "("); ok {
		l.Part, _, _ = strings.Cut(why, ",")
	}
	return l
}

// sameDestination returns the tenant's other exfil-link incidents (at most
// 20, among its newest 1000) that point at host.
func (p *pages) sameDestination(ctx context.Context, in incident.Incident, host string) ([]incident.Incident, error) {
	page, err := p.o.Store.ListIncidents(ctx, store.IncidentFilter{Tenant: in.Tenant, Kind: in.Kind, Limit: 1000})
	if err != nil {
		return nil, err
	}
	var out []incident.Incident
	for _, o := range page.Incidents {
		if o.ID != in.ID && exfilParts(o).Host == host && len(out) < 20 {
			out = append(out, o)
		}
	}
	return out, nil
}

// grantEntries are the grants in force for a tenant's class, shown as
// `sluice policy explain` shows them: the entry, and as its origin the
// access request it came from, with its end.
func grantEntries(gs []rules.Grant, tenant, class string) []policyEntry {
	var out []policyEntry
	for _, g := range gs {
		if g.Tenant != tenant || (g.Class != "" && g.Class != class) {
			continue
		}
		en := g.Entry
		en.Origin = rules.Origin{Kind: rules.OriginGrant, Grant: g.ID}
		pe := policyEntry{List: "allow", Entry: en, Origin: en.Origin.String()}
		if g.Passthrough {
			pe.List = "passthrough"
		}
		if !g.Expires.IsZero() {
			pe.Origin += ", until " + g.Expires.UTC().Format("2006-01-02 15:04Z")
		}
		out = append(out, pe)
	}
	return out
}

// blockedAttempts counts, for each request, its tenant's refused attempts
// on its host: what stood behind the request.
func (p *pages) blockedAttempts(ctx context.Context, reqs []store.AccessRequest) (map[string]int64, error) {
	out := map[string]int64{}
	for _, a := range reqs {
		n, err := p.o.Store.CountIncidents(ctx, store.IncidentFilter{Tenant: a.Tenant, Host: a.Host, Kind: "deny"})
		if err != nil {
			return nil, err
		}
		if n > 0 {
			out[a.ID] = n
		}
	}
	return out, nil
}

// runEntries are a registered run's own entries, as `sluice policy explain
// --run` lists them: each with its origin (derived preset, run extra, grant).
func runEntries(e *rules.Engine, id string) []policyEntry {
	_, _, allow, pass, ok := e.RunEntries(id)
	if !ok {
		return nil
	}
	var out []policyEntry
	for _, en := range allow {
		out = append(out, policyEntry{List: "allow", Entry: en, Origin: en.Origin.String()})
	}
	for _, en := range pass {
		out = append(out, policyEntry{List: "passthrough", Entry: en, Origin: en.Origin.String()})
	}
	return out
}

// classRunEntries are the own entries of the registered runs of a tenant's class.
func classRunEntries(e *rules.Engine, tenant, class string) []policyEntry {
	var out []policyEntry
	for _, id := range e.RunIDs() {
		if t, c, _, _, ok := e.RunEntries(id); ok && t == tenant && c == class {
			out = append(out, runEntries(e, id)...)
		}
	}
	return out
}

// ownProposal refuses, as not found, a proposal outside a tenant-scoped
// user's tenant (staff users see every proposal).
func (p *pages) ownProposal(r *http.Request, pr Principal, id string) error {
	if pr.Tenant == "" {
		return nil
	}
	ps, err := p.o.Store.ListProposals(r.Context(), store.ProposalFilter{Tenant: pr.Tenant, Limit: 1000})
	if err != nil {
		return err
	}
	for _, x := range ps {
		if x.ID == id {
			return nil
		}
	}
	return hidden("proposal", id)
}
