package dashboard

import (
	"html/template"
	"net/http"
	"time"

	"github.com/sluice-egress/sluice/store"
)

// overviewRanges are the periods the overview offers, with their buckets.
var overviewRanges = []struct {
	Name   string
	Period time.Duration
	Bucket time.Duration
}{
	{"24h", 24 * time.Hour, time.Hour},
	{"7d", 7 * 24 * time.Hour, 6 * time.Hour},
	{"30d", 30 * 24 * time.Hour, 24 * time.Hour},
}

type overviewData struct {
	Range, By, Tenant string
	Ranges            []string
	Tenants           []string
	Chart             template.HTML
	Total             int64
	ByAction          []store.KeyCount
	TopRules          []store.KeyCount
	TopHosts          []store.KeyCount
	Attention         attention
}

func (p *pages) overview(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	tenant, err := pageTenant(r, q.Get("tenant"))
	if err != nil {
		p.fail(w, r, err)
		return
	}
	d := overviewData{Range: "24h", By: "kind", Tenant: tenant}
	if q.Get("by") == "tenant" {
		d.By = "tenant"
	}
	rg := overviewRanges[0]
	for _, o := range overviewRanges {
		d.Ranges = append(d.Ranges, o.Name)
		if o.Name == q.Get("range") {
			rg, d.Range = o, o.Name
		}
	}
	if e := p.o.engine(); e != nil {
		for _, t := range e.Tenants() {
			if principal(r).SeesTenant(t) {
				d.Tenants = append(d.Tenants, t)
			}
		}
	}
	now := p.o.now().UTC()
	end := now.Truncate(rg.Bucket).Add(rg.Bucket)
	start := end.Add(-rg.Period)
	f := store.IncidentFilter{Tenant: d.Tenant, Since: start, Until: end}
	ctx := r.Context()
	if d.Attention, err = p.attention(ctx, d.Tenant, principal(r)); err != nil {
		p.fail(w, r, err)
		return
	}
	counts, err := p.o.Store.CountOverTime(ctx, f, rg.Bucket)
	if err != nil {
		p.fail(w, r, err)
		return
	}
	pts := make([]point, 0, len(counts))
	for _, c := range counts {
		k := c.Kind
		if d.By == "tenant" {
			k = c.Tenant
		}
		pts = append(pts, point{at: c.Start, key: k, count: c.Count})
		d.Total += c.Count
	}
	n := int(rg.Period / rg.Bucket)
	d.Chart = BarChart{Start: start, Bucket: rg.Bucket, Series: seriesFrom(start, rg.Bucket, n, pts, 8)}.SVG()
	for _, a := range []string{"block", "redact", "alert"} {
		fa := f
		fa.Action = a
		top, err := p.o.Store.CountOverTime(ctx, fa, rg.Period)
		if err != nil {
			p.fail(w, r, err)
			return
		}
		var sum int64
		for _, c := range top {
			sum += c.Count
		}
		d.ByAction = append(d.ByAction, store.KeyCount{Key: a, Count: sum})
	}
	if d.TopRules, err = p.o.Store.TopRules(ctx, f, 10); err != nil {
		p.fail(w, r, err)
		return
	}
	if d.TopHosts, err = p.o.Store.TopHosts(ctx, f, 10); err != nil {
		p.fail(w, r, err)
		return
	}
	p.render(w, r, http.StatusOK, "overview", "Overview", d)
}
