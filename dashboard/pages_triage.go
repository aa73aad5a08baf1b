package dashboard

import (
	"context"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/sluice-egress/sluice/incident"
	"github.com/sluice-egress/sluice/store"
)

// pageTenant is the tenant a page is limited to: what a staff user asked
// for ("" for all), a tenant-scoped user's own. Asking for another tenant
// is not found, as if it did not exist.
func pageTenant(r *http.Request, asked string) (string, error) {
	t, err := scopeTenant(principal(r), asked)
	if err != nil {
		return "", fmt.Errorf("%w: tenant %q", store.ErrNotFound, asked)
	}
	return t, nil
}

// choiceKeys are the filters offered as choices, with their labels.
var choiceKeys = []struct{ Key, Label string }{
	{"tenant", "Tenant"}, {"class", "Class"}, {"kind", "Kind"}, {"reason", "Reason"},
	{"action", "Action"}, {"rule", "Rule"}, {"triage", "Triage"},
}

// maxChoices bounds each filter's list of choices.
const maxChoices = 100

type choice struct {
	Key, Label string
	Values     []store.KeyCount
}

// column is a sortable column header.
type column struct {
	Label string
	Key   string // "" for time
	URL   template.URL
	Mark  string // "▲", "▼" or ""
}

type incidentsData struct {
	Filter    map[string]string
	Choices   []choice
	Hosts     []store.KeyCount
	Columns   []column
	Incidents []incident.Incident
	// GroupBy is the grouping ("" for none) and Groups its groups.
	GroupBy   string
	GroupKeys []string
	Groups    []store.IncidentGroup
	// Query is the filters alone (the bulk form sends it back).
	Query string
	// Next is the query string of the following page, "" on the last.
	Next template.URL
	// First is the query string of the first page (the filters alone).
	First   template.URL
	Paged   bool
	Triages []string
	Scoped  bool
}

func (p *pages) incidents(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f, err := filterFrom(q)
	if err == nil {
		f.Tenant, err = pageTenant(r, f.Tenant)
	}
	if err != nil {
		p.fail(w, r, err)
		return
	}
	pr := principal(r)
	d := incidentsData{Filter: map[string]string{}, Triages: incident.TriageStates, GroupKeys: store.GroupKeys,
		Paged: f.After != "" || f.Offset > 0, Scoped: pr.Tenant != ""}
	keep := url.Values{}
	for _, k := range incidentFilterKeys {
		if v := q.Get(k); v != "" {
			d.Filter[k] = v
			keep.Set(k, v)
		}
	}
	ctx := r.Context()
	if g := q.Get("group"); g != "" {
		if !slices.Contains(store.GroupKeys, g) {
			p.fail(w, r, fmt.Errorf("%w: group by %q", errBadInput, g))
			return
		}
		d.GroupBy = g
		if d.Groups, err = p.o.Store.GroupIncidents(ctx, f, g, 200); err != nil {
			p.fail(w, r, err)
			return
		}
	} else {
		page, err := p.o.Store.ListIncidents(ctx, f)
		if err != nil {
			p.fail(w, r, err)
			return
		}
		d.Incidents = page.Incidents
		if page.Next != "" {
			next := cloneValues(keep)
			if f.Sort != "" {
				next.Set("offset", page.Next)
			} else {
				next.Set("after", page.Next)
			}
			d.Next = template.URL(next.Encode())
		}
	}
	keep.Del("group")
	d.Query = keep.Encode()
	d.First = template.URL(d.Query)
	if d.Choices, d.Hosts, err = p.choices(ctx, f.Tenant, pr.Tenant != ""); err != nil {
		p.fail(w, r, err)
		return
	}
	d.Columns = sortColumns(keep, f)
	p.render(w, r, http.StatusOK, "incidents", "Incidents", d)
}

func cloneValues(v url.Values) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	return out
}

// choiceTTL is how long a tenant's filter choices are reused: counting
// every column's values costs a scan of the table, and a choice that
// appeared a few seconds ago can wait for the next refresh.
const choiceTTL = 30 * time.Second

// choiceCache holds the filter choices per tenant ("" for all) and scoping.
type choiceCache struct {
	mu sync.Mutex
	m  map[string]cachedChoices
}

type cachedChoices struct {
	at      time.Time
	choices []choice
	hosts   []store.KeyCount
}

// choices lists each filter's values among the tenant's incidents, from
// the cache when it is fresh.
func (p *pages) choices(ctx context.Context, tenant string, scoped bool) ([]choice, []store.KeyCount, error) {
	key := fmt.Sprintf("%t/%s", scoped, tenant)
	now := p.o.now()
	p.choiceCache.mu.Lock()
	c, ok := p.choiceCache.m[key]
	p.choiceCache.mu.Unlock()
	if ok && now.Sub(c.at) < choiceTTL && !now.Before(c.at) {
		return c.choices, c.hosts, nil
	}
	cs, hosts, err := p.countChoices(ctx, tenant, scoped)
	if err != nil {
		return nil, nil, err
	}
	p.choiceCache.mu.Lock()
	if p.choiceCache.m == nil || len(p.choiceCache.m) > 1000 {
		p.choiceCache.m = map[string]cachedChoices{}
	}
	p.choiceCache.m[key] = cachedChoices{at: now, choices: cs, hosts: hosts}
	p.choiceCache.mu.Unlock()
	return cs, hosts, nil
}

func (p *pages) countChoices(ctx context.Context, tenant string, scoped bool) ([]choice, []store.KeyCount, error) {
	all, err := p.o.Store.AllChoices(ctx, store.IncidentFilter{Tenant: tenant}, maxChoices)
	if err != nil {
		return nil, nil, err
	}
	var out []choice
	for _, c := range choiceKeys {
		if c.Key == "tenant" && scoped {
			continue
		}
		out = append(out, choice{Key: c.Key, Label: c.Label, Values: all[c.Key]})
	}
	return out, all["host"], nil
}

// sortColumns are the listing's headers, each a link that sorts by it
// (again: the other way).
func sortColumns(keep url.Values, f store.IncidentFilter) []column {
	cols := []column{{Label: "Time (UTC)"}, {Label: "Tenant", Key: "tenant"}, {Label: "Run", Key: "run"},
		{Label: "Kind", Key: "kind"}, {Label: "Reason", Key: "reason"}, {Label: "Action", Key: "action"},
		{Label: "Rule", Key: "rule"}, {Label: "Request", Key: "host"}, {Label: "Triage", Key: "triage"}}
	for i := range cols {
		c := &cols[i]
		v := cloneValues(keep)
		v.Del("sort")
		v.Del("dir")
		on := f.Sort == c.Key
		if c.Key != "" {
			v.Set("sort", c.Key)
		}
		switch {
		case on && f.Asc:
			c.Mark = "▲"
		case on:
			c.Mark = "▼"
			v.Set("dir", "asc")
		case c.Key != "":
			v.Set("dir", "asc") // a new column starts A to Z
		}
		c.URL = template.URL(v.Encode())
	}
	return cols
}

// bulkTriage triages the checked incidents, or every incident of the
// checked groups (within the filters the page showed), with one note.
func (p *pages) bulkTriage(w http.ResponseWriter, r *http.Request) {
	pr := principal(r)
	state := r.PostFormValue("state")
	note := strings.TrimSpace(r.PostFormValue("note"))
	if len(note) > maxNote {
		p.fail(w, r, fmt.Errorf("%w: the note is longer than %d bytes", errBadInput, maxNote))
		return
	}
	if state == incident.TriageFalsePositive && note == "" {
		p.fail(w, r, fmt.Errorf("%w: a false positive needs a reason", errBadInput))
		return
	}
	back, err := url.ParseQuery(r.PostFormValue("filter"))
	if err != nil {
		p.fail(w, r, fmt.Errorf("%w: filter", errBadInput))
		return
	}
	ids := r.PostForm["id"]
	if by, groups := r.PostFormValue("by"), r.PostForm["group"]; len(groups) > 0 {
		if !slices.Contains(store.GroupKeys, by) {
			p.fail(w, r, fmt.Errorf("%w: group by %q", errBadInput, by))
			return
		}
		for _, g := range groups {
			gq := cloneValues(back)
			gq.Set(by, g)
			f, err := filterFrom(gq)
			if err == nil {
				f.Tenant, err = pageTenant(r, f.Tenant)
			}
			var more []string
			if err == nil {
				more, err = p.o.Store.MatchingIDs(r.Context(), f)
			}
			if err != nil {
				p.fail(w, r, err)
				return
			}
			ids = append(ids, more...)
		}
		back.Set("group", by)
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	if len(ids) == 0 {
		p.fail(w, r, fmt.Errorf("%w: nothing selected", errBadInput))
		return
	}
	n, err := p.o.Store.TriageIncidents(r.Context(), ids, store.TriageUpdate{State: state, Note: note, Actor: pr.Name}, pr.SeesTenant)
	if err != nil {
		p.fail(w, r, err)
		return
	}
	p.logger().Info("dashboard: bulk triage", "incidents", n, "state", state, "actor", pr.Name)
	http.Redirect(w, r, "/incidents?"+back.Encode(), http.StatusSeeOther)
}

type timelineData struct {
	Host, Run, Range string
	Ranges           []string
	Chart            template.HTML
	Total            int64
	Kinds            []store.KeyCount
	Incidents        []incident.Incident
	List             template.URL
}

// timeline shows one host's or one run's incidents over time, oldest first.
func (p *pages) timeline(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	d := timelineData{Host: q.Get("host"), Run: q.Get("run"), Range: "7d"}
	if d.Host == "" && d.Run == "" {
		p.fail(w, r, fmt.Errorf("%w: a timeline is of a host or a run", errBadInput))
		return
	}
	tenant, err := pageTenant(r, q.Get("tenant"))
	if err != nil {
		p.fail(w, r, err)
		return
	}
	rg := overviewRanges[1]
	for _, o := range overviewRanges {
		d.Ranges = append(d.Ranges, o.Name)
		if o.Name == q.Get("range") {
			rg, d.Range = o, o.Name
		}
	}
	end := p.o.now().UTC().Truncate(rg.Bucket).Add(rg.Bucket)
	start := end.Add(-rg.Period)
	f := store.IncidentFilter{Tenant: tenant, Host: d.Host, Run: d.Run, Since: start, Until: end}
	ctx := r.Context()
	counts, err := p.o.Store.CountOverTime(ctx, f, rg.Bucket)
	if err != nil {
		p.fail(w, r, err)
		return
	}
	pts := make([]point, 0, len(counts))
	for _, c := range counts {
		pts = append(pts, point{at: c.Start, key: c.Kind, count: c.Count})
		d.Total += c.Count
	}
	d.Chart = BarChart{Start: start, Bucket: rg.Bucket, Series: seriesFrom(start, rg.Bucket, int(rg.Period/rg.Bucket), pts, 8)}.SVG()
	if d.Kinds, err = p.o.Store.Choices(ctx, f, "kind", 20); err != nil {
		p.fail(w, r, err)
		return
	}
	f.Asc, f.Limit = true, 200
	page, err := p.o.Store.ListIncidents(ctx, f)
	if err != nil {
		p.fail(w, r, err)
		return
	}
	d.Incidents = page.Incidents
	d.List = template.URL(url.Values{"host": {d.Host}, "run": {d.Run}}.Encode())
	title := "Timeline of " + d.Host
	if d.Run != "" {
		title = "Timeline of run " + d.Run
	}
	p.render(w, r, http.StatusOK, "timeline", title, d)
}

// attention is what the overview counts as waiting for someone.
type attention struct {
	New     int64
	Pending int
	Rising  []store.RuleTrend
}

// risingPeriod is the window in which a rule's false positives are
// compared with the window before.
const risingPeriod = 7 * 24 * time.Hour

func (p *pages) attention(ctx context.Context, tenant string, pr Principal) (attention, error) {
	var a attention
	var err error
	if a.New, err = p.o.Store.CountIncidents(ctx, store.IncidentFilter{Tenant: tenant, Triage: incident.TriageNew}); err != nil {
		return a, err
	}
	reqs, err := p.o.Store.ListAccessRequests(ctx, store.AccessFilter{Tenant: tenant, State: store.AccessPending, Limit: 1000})
	if err != nil {
		return a, err
	}
	for _, x := range reqs {
		if pr.SeesTenant(x.Tenant) && (tenant == "" || x.Tenant == tenant) {
			a.Pending++
		}
	}
	a.Rising, err = p.o.Store.RisingFalsePositives(ctx, tenant, p.o.now(), risingPeriod)
	return a, err
}

// mountTriage adds the triage and runs pages to r (behind the pages' auth).
func mountTriage(r chi.Router, p *pages) {
	r.With(require(RoleReviewer)).Post("/incidents/bulk", p.bulkTriage)
	r.Get("/timeline", p.timeline)
	r.Get("/runs", p.runsPage)
	r.Get("/runs/{id}", p.runPage)
	r.With(require(RoleAdmin)).Post("/runs/{id}/end", p.endRun)
	r.With(require(RoleReviewer)).Post("/incidents/{id}/request-access", p.requestAccess)
}
