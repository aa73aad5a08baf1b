package dashboard

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/sluice-egress/sluice/rules"
	"github.com/sluice-egress/sluice/store"
)

type rulesData struct {
	Stats     []store.RuleStat
	Proposals []store.Proposal
	State     string
}

func (p *pages) rules(w http.ResponseWriter, r *http.Request) {
	var d rulesData
	tenant, err := pageTenant(r, "")
	if err != nil {
		p.fail(w, r, err)
		return
	}
	if d.Stats, err = p.o.Store.RuleStats(r.Context(), store.IncidentFilter{Tenant: tenant}); err != nil {
		p.fail(w, r, err)
		return
	}
	d.State = store.ProposalOpen
	if r.URL.Query().Get("proposals") == "all" {
		d.State = ""
	}
	if d.Proposals, err = p.o.Store.ListProposals(r.Context(), store.ProposalFilter{State: d.State, Tenant: tenant}); err != nil {
		p.fail(w, r, err)
		return
	}
	p.render(w, r, http.StatusOK, "rules", "Rules", d)
}

func (p *pages) closeProposal(w http.ResponseWriter, r *http.Request) {
	pr, _ := PrincipalFrom(r.Context())
	note := strings.TrimSpace(r.PostFormValue("note"))
	if len(note) > maxNote {
		p.fail(w, r, fmt.Errorf("%w: the note is longer than %d bytes", errBadInput, maxNote))
		return
	}
	id := chi.URLParam(r, "id")
	if err := p.ownProposal(r, pr, id); err != nil {
		p.fail(w, r, err)
		return
	}
	if _, err := p.o.Store.CloseProposal(r.Context(), id, pr.Name, note); err != nil {
		p.fail(w, r, err)
		return
	}
	http.Redirect(w, r, "/rules", http.StatusSeeOther)
}

// policyEntry is one allow or passthrough entry as shown: no token, no
// secret (entries hold none), its origin spelled out.
type policyEntry struct {
	List   string // "allow" or "passthrough"
	Entry  rules.Entry
	Origin string
}

type policyClass struct {
	Tenant, Class string
	Entries       []policyEntry
}

type policyData struct {
	Tenant, Class string
	Tenants       []string
	Classes       []policyClass
	NoEngine      bool
}

func (p *pages) policy(w http.ResponseWriter, r *http.Request) {
	pr, _ := PrincipalFrom(r.Context())
	q := r.URL.Query()
	d := policyData{Tenant: q.Get("tenant"), Class: q.Get("class")}
	e := p.o.engine()
	if e == nil {
		d.NoEngine = true
		p.render(w, r, http.StatusOK, "policy", "Policy", d)
		return
	}
	for _, t := range e.Tenants() {
		if !pr.SeesTenant(t) {
			continue
		}
		d.Tenants = append(d.Tenants, t)
		if d.Tenant != "" && t != d.Tenant {
			continue
		}
		for _, c := range e.Classes(t) {
			if d.Class != "" && c != d.Class {
				continue
			}
			pc := policyClass{Tenant: t, Class: c}
			allow, pass := e.Entries(t, c)
			for _, en := range allow {
				pc.Entries = append(pc.Entries, policyEntry{List: "allow", Entry: en, Origin: en.Origin.String()})
			}
			for _, en := range pass {
				pc.Entries = append(pc.Entries, policyEntry{List: "passthrough", Entry: en, Origin: en.Origin.String()})
			}
			pc.Entries = append(pc.Entries, grantEntries(e.Grants(), t, c)...)
			pc.Entries = append(pc.Entries, classRunEntries(e, t, c)...)
			d.Classes = append(d.Classes, pc)
		}
	}
	p.render(w, r, http.StatusOK, "policy", "Policy", d)
}

type accessData struct {
	State    string
	States   []string
	Requests []store.AccessRequest
	// Blocked counts, by request id, the refused attempts on its host.
	Blocked map[string]int64
}

func (p *pages) access(w http.ResponseWriter, r *http.Request) {
	pr, _ := PrincipalFrom(r.Context())
	d := accessData{State: store.AccessPending,
		States: []string{store.AccessPending, store.AccessApproved, store.AccessDenied, store.AccessExpired, "all"}}
	if s := r.URL.Query().Get("state"); s != "" {
		d.State = s
	}
	f := store.AccessFilter{State: d.State}
	if d.State == "all" {
		f.State = ""
	}
	reqs, err := p.o.Store.ListAccessRequests(r.Context(), f)
	if err != nil {
		p.fail(w, r, err)
		return
	}
	for _, a := range reqs {
		if pr.SeesTenant(a.Tenant) {
			d.Requests = append(d.Requests, a)
		}
	}
	if d.Blocked, err = p.blockedAttempts(r.Context(), d.Requests); err != nil {
		p.fail(w, r, err)
		return
	}
	p.render(w, r, http.StatusOK, "access", "Access requests", d)
}

func (p *pages) decide(w http.ResponseWriter, r *http.Request) {
	pr, _ := PrincipalFrom(r.Context())
	id := chi.URLParam(r, "id")
	reason := strings.TrimSpace(r.PostFormValue("reason"))
	var approve bool
	switch r.PostFormValue("decision") {
	case "approve":
		approve = true
	case "deny":
	default:
		p.fail(w, r, fmt.Errorf("%w: decision must be approve or deny", errBadInput))
		return
	}
	if reason == "" || len(reason) > maxNote {
		p.fail(w, r, fmt.Errorf("%w: a decision needs a reason (at most %d bytes)", errBadInput, maxNote))
		return
	}
	a, err := p.o.Store.GetAccessRequest(r.Context(), id)
	if err == nil && !pr.SeesTenant(a.Tenant) {
		err = fmt.Errorf("%w: access request %s", store.ErrNotFound, id)
	}
	if err == nil {
		err = decideAccess(r.Context(), p.o, pr, id, approve, reason)
	}
	if err != nil {
		code, show := statusOf(err) // the API's table of errors
		if !show {
			p.fail(w, r, err)
			return
		}
		p.render(w, r, code, "error", http.StatusText(code), strings.TrimPrefix(err.Error(), "store: "))
		return
	}
	p.logger().Info("dashboard: access decided", "request", id, "approve", approve, "actor", pr.Name)
	http.Redirect(w, r, "/access?state="+url.QueryEscape(store.AccessPending), http.StatusSeeOther)
}

type auditData struct {
	Entries []store.AuditEntry
	Tenant  string
	Next    int64
}

func (p *pages) audit(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	tenant, err := pageTenant(r, q.Get("tenant"))
	if err != nil {
		p.fail(w, r, err)
		return
	}
	f := store.AuditFilter{Tenant: tenant, Limit: 100}
	if b := q.Get("before"); b != "" {
		n, err := strconv.ParseInt(b, 10, 64)
		if err != nil || n <= 0 {
			p.fail(w, r, fmt.Errorf("%w: before must be an entry number", errBadInput))
			return
		}
		f.Before = n
	}
	es, err := p.o.Store.ListAudit(r.Context(), f)
	if err != nil {
		p.fail(w, r, err)
		return
	}
	d := auditData{Entries: es, Tenant: f.Tenant}
	if len(es) == f.Limit {
		d.Next = es[len(es)-1].ID
	}
	p.render(w, r, http.StatusOK, "audit", "Audit log", d)
}
