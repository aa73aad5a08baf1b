package dashboard

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/sluice-egress/sluice/incident"
	"github.com/sluice-egress/sluice/store"
)

// incidentFilterKeys are the listing's query parameters, in form order.
var incidentFilterKeys = []string{"q", "tenant", "run", "class", "kind", "reason", "rule", "action", "host", "fingerprint",
	"triage", "since", "until", "sort", "dir", "group"}

// timeLayouts are accepted for since and until: RFC 3339 and the browser's
// datetime-local value, read as UTC.
var timeLayouts = []string{time.RFC3339, "2006-01-02T15:04", "2006-01-02T15:04:05", "2006-01-02"}

func parseFormTime(s string) (time.Time, error) {
	for _, l := range timeLayouts {
		if t, err := time.ParseInLocation(l, s, time.UTC); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%w: time %q (want 2006-01-02T15:04 or RFC 3339)", errBadInput, s)
}

// filterFrom reads an IncidentFilter from query parameters.
func filterFrom(q url.Values) (store.IncidentFilter, error) {
	f := store.IncidentFilter{
		Tenant: q.Get("tenant"), Run: q.Get("run"), Class: q.Get("class"), Kind: q.Get("kind"),
		Rule: q.Get("rule"), Action: q.Get("action"), Host: q.Get("host"), Triage: q.Get("triage"),
		After: q.Get("after"), Fingerprint: q.Get("fingerprint"), Reason: q.Get("reason"),
		Search: strings.TrimSpace(q.Get("q")), Sort: q.Get("sort"), Asc: q.Get("dir") == "asc",
	}
	if s := q.Get("offset"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return f, fmt.Errorf("%w: offset %q", errBadInput, s)
		}
		f.Offset = n
	}
	var err error
	if s := q.Get("since"); s != "" {
		if f.Since, err = parseFormTime(s); err != nil {
			return f, err
		}
	}
	if s := q.Get("until"); s != "" {
		if f.Until, err = parseFormTime(s); err != nil {
			return f, err
		}
	}
	return f, nil
}

type incidentData struct {
	In   incident.Incident
	Same []incident.Incident
	// Link is an exfil link's destination and what carried data ("" otherwise);
	// Same is then the incidents with the same destination.
	Link    exfilLink
	History []store.TriageChange
	Triages []string
	Scheme  string
	// Trace is the decision trace (trace.go); nil without a policy.
	Trace *traceView
}

// getIncident loads an incident the principal may see; another tenant's
// is ErrNotFound, as if it did not exist.
func (p *pages) getIncident(r *http.Request) (incident.Incident, error) {
	id := chi.URLParam(r, "id")
	in, err := p.o.Store.GetIncident(r.Context(), id)
	if err != nil {
		return in, err
	}
	if pr, _ := PrincipalFrom(r.Context()); !pr.SeesTenant(in.Tenant) {
		return incident.Incident{}, fmt.Errorf("%w: incident %s", store.ErrNotFound, id)
	}
	return in, nil
}

func (p *pages) incident(w http.ResponseWriter, r *http.Request) {
	in, err := p.getIncident(r)
	if err != nil {
		p.fail(w, r, err)
		return
	}
	d := incidentData{In: in, Triages: incident.TriageStates, Scheme: schemeFor(in.Port), Link: exfilParts(in), Trace: traceOf(p.o, in)}
	if d.Link.Host != "" {
		if d.Same, err = p.sameDestination(r.Context(), in, d.Link.Host); err != nil {
			p.fail(w, r, err)
			return
		}
	} else if in.Fingerprint != "" && in.Tenant != "" {
		same, err := p.o.Store.SameFingerprint(r.Context(), in.Tenant, in.Fingerprint, 21)
		if err != nil {
			p.fail(w, r, err)
			return
		}
		for _, s := range same {
			if s.ID != in.ID {
				d.Same = append(d.Same, s)
			}
		}
	}
	if d.History, err = p.o.Store.TriageHistory(r.Context(), in.ID); err != nil {
		p.fail(w, r, err)
		return
	}
	p.render(w, r, http.StatusOK, "incident", "Incident "+in.ID, d)
}

func schemeFor(port int) string {
	if port == 80 || port == 8080 {
		return "http"
	}
	return "https"
}

// maxNote bounds triage notes and reasons.
const maxNote = 4000

func (p *pages) triage(w http.ResponseWriter, r *http.Request) {
	in, err := p.getIncident(r)
	if err != nil {
		p.fail(w, r, err)
		return
	}
	pr, _ := PrincipalFrom(r.Context())
	state := r.PostFormValue("state")
	note := strings.TrimSpace(r.PostFormValue("note"))
	propose := r.PostFormValue("propose")
	if len(note) > maxNote {
		p.fail(w, r, fmt.Errorf("%w: the note is longer than %d bytes", errBadInput, maxNote))
		return
	}
	if state == incident.TriageFalsePositive && note == "" {
		p.fail(w, r, fmt.Errorf("%w: a false positive needs a reason", errBadInput))
		return
	}
	if propose != "" && state != incident.TriageFalsePositive {
		p.fail(w, r, fmt.Errorf("%w: only a false positive can propose a change", errBadInput))
		return
	}
	var prop store.Proposal
	switch propose {
	case "":
	case store.ProposalRuleAllowlist:
		if in.Rule == "" {
			p.fail(w, r, fmt.Errorf("%w: this incident has no detection rule to allowlist", errBadInput))
			return
		}
		prop = store.Proposal{Kind: propose, Rule: in.Rule, Host: in.Host, Path: in.Path}
	case store.ProposalPolicyEntry:
		prop = store.Proposal{Kind: propose, Host: in.Host}
	default:
		p.fail(w, r, fmt.Errorf("%w: unknown proposal %q", errBadInput, propose))
		return
	}
	if _, err := p.o.Store.TriageIncident(r.Context(), in.ID, store.TriageUpdate{State: state, Note: note, Actor: pr.Name}); err != nil {
		p.fail(w, r, err)
		return
	}
	if propose != "" {
		prop.IncidentID, prop.Tenant, prop.Reason, prop.Actor = in.ID, in.Tenant, note, pr.Name
		if _, err := p.o.Store.CreateProposal(r.Context(), prop); err != nil {
			p.fail(w, r, err)
			return
		}
	}
	p.logger().Info("dashboard: triage", "incident", in.ID, "state", state, "actor", pr.Name)
	http.Redirect(w, r, "/incidents/"+url.PathEscape(in.ID), http.StatusSeeOther)
}

func (p *pages) har(w http.ResponseWriter, r *http.Request) {
	in, err := p.getIncident(r)
	if err != nil {
		p.fail(w, r, err)
		return
	}
	b, err := IncidentHAR(in)
	if err != nil {
		p.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", safeFileName(in.ID)+".har"))
	w.Write(b)
}

// safeFileName keeps letters, digits, '_' and '-'.
func safeFileName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || r == '-' || ('0' <= r && r <= '9') || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') {
			return r
		}
		return -1
	}, s)
}
