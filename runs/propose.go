package runs

import (
	"cmp"
	"maps"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-egress/sluice/rules"
	"github.com/sluice-egress/sluice/rules/match"
)

// A policy drafted from observation: what a tenant's runs did (allowed and
// would-refuse requests, blind tunnels) becomes a least-privilege allowlist,
// each entry with its counts, first and last time seen, the runs that used
// it, the presets that already cover it and the exfiltration risk of its
// destination. Refused requests are listed apart, never proposed as
// entries: a refusal may have been an attack.

// Verdicts of an Observed.
const (
	VerdictAllowed     = "allowed"
	VerdictWouldRefuse = "would-refuse"
	VerdictRefused     = "refused"
)

// Observed is one row of what runs did: requests to one host, port, method
// and path prefix (method CONNECT and no path for a blind tunnel).
type Observed struct {
	Class, Run   string
	Host         string
	Port         int
	Method, Path string
	Verdict      string
	Count        int64
	First, Last  time.Time
}

// ProposeInput is what Propose drafts from.
type ProposeInput struct {
	Tenant string
	// Class limits the draft to one class; "" for every class seen.
	Class    string
	Observed []Observed
}

// Proposal is a drafted policy for one tenant.
type Proposal struct {
	Tenant  string
	Classes []ProposedClass
}

// ProposedClass is the draft of one launch class.
type ProposedClass struct {
	Name        string
	Allow       []ProposedEntry
	Passthrough []ProposedEntry
	// Refused lists what the policy refused, for a reviewer to judge.
	Refused []ProposedEntry
}

// ProposedEntry is one drafted entry and its evidence.
type ProposedEntry struct {
	Entry       rules.Entry
	Count       int64
	First, Last time.Time
	Runs        []string
	// Presets already cover the entry's host and port.
	Presets []string
	// Risk is "high", "medium" or "low"; RiskWhy says why.
	Risk, RiskWhy string
	// Problem, when set, is why the entry cannot stand in a config (it is
	// emitted commented out).
	Problem string
}

// Path collapsing: a prefix with more than collapseChildren distinct
// next segments stands for all of them.
const collapseChildren = 3

// Propose drafts the policy.
func Propose(in ProposeInput) Proposal {
	byClass := map[string][]Observed{}
	for _, o := range in.Observed {
		if in.Class != "" && o.Class != in.Class || o.Host == "" {
			continue
		}
		byClass[o.Class] = append(byClass[o.Class], o)
	}
	p := Proposal{Tenant: in.Tenant}
	for _, cn := range slices.Sorted(maps.Keys(byClass)) {
		var allow, blind, refused []Observed
		for _, o := range byClass[cn] {
			switch {
			case o.Verdict == VerdictRefused:
				refused = append(refused, o)
			case o.Method == http.MethodConnect:
				blind = append(blind, o)
			default:
				allow = append(allow, o)
			}
		}
		pc := ProposedClass{Name: cn,
			Allow:       finish(in.Tenant, cn, wildcards(hostEntries(allow)), false),
			Passthrough: finish(in.Tenant, cn, wildcards(hostEntries(blind)), true),
			Refused:     finish(in.Tenant, cn, hostEntries(refused), false),
		}
		p.Classes = append(p.Classes, pc)
	}
	return p
}

// draft is an entry under construction with its evidence.
type draft struct {
	ProposedEntry
	runs map[string]bool
}

func (d *draft) add(o Observed) {
	d.Count += o.Count
	if d.First.IsZero() || !o.First.IsZero() && o.First.Before(d.First) {
		d.First = o.First
	}
	if o.Last.After(d.Last) {
		d.Last = o.Last
	}
	if o.Run != "" {
		d.runs[o.Run] = true
	}
}

func (d *draft) merge(o *draft) {
	d.add(Observed{Count: o.Count, First: o.First, Last: o.Last})
	for r := range o.runs {
		d.runs[r] = true
	}
}

// hostEntries drafts the entries of one host each: its ports, and per group
// of methods whose collapsed paths are the same, those paths.
func hostEntries(obs []Observed) []*draft {
	type hostObs struct {
		ports   map[int]bool
		methods map[string][]string
		byMeth  map[string]*draft
	}
	hosts := map[string]*hostObs{}
	for _, o := range obs {
		h := hosts[o.Host]
		if h == nil {
			h = &hostObs{ports: map[int]bool{}, methods: map[string][]string{}, byMeth: map[string]*draft{}}
			hosts[o.Host] = h
		}
		h.ports[o.Port] = true
		m := strings.ToUpper(o.Method)
		h.methods[m] = append(h.methods[m], o.Path)
		if h.byMeth[m] == nil {
			h.byMeth[m] = &draft{runs: map[string]bool{}}
		}
		h.byMeth[m].add(o)
	}
	var out []*draft
	for _, host := range slices.Sorted(maps.Keys(hosts)) {
		h := hosts[host]
		ports := slices.Sorted(maps.Keys(h.ports))
		groups := map[string]*draft{} // by collapsed paths
		var order []string
		for _, m := range slices.Sorted(maps.Keys(h.methods)) {
			paths := collapsePaths(h.methods[m])
			key := strings.Join(paths, "\x00")
			g := groups[key]
			if g == nil {
				g = &draft{runs: map[string]bool{}}
				g.Entry = rules.Entry{Host: host, Ports: ports, Paths: paths}
				groups[key] = g
				order = append(order, key)
			}
			if m != http.MethodConnect && m != "" {
				g.Entry.Methods = append(g.Entry.Methods, m)
			}
			g.merge(h.byMeth[m])
		}
		for _, k := range order {
			out = append(out, groups[k])
		}
	}
	return out
}

// collapsePaths reduces observed path prefixes to the fewest prefixes that
// cover them: a prefix under another goes, and a prefix with more than
// collapseChildren distinct next segments stands for all of them. nil means
// any path.
func collapsePaths(paths []string) []string {
	set := map[string]bool{}
	for _, p := range paths {
		if p == "" || p == "/" {
			return nil
		}
		set[p] = true
	}
	for changed := true; changed; {
		changed = false
		children := map[string]map[string]bool{} // parent prefix -> next segments
		for p := range set {
			parent, seg := splitLast(p)
			if children[parent] == nil {
				children[parent] = map[string]bool{}
			}
			children[parent][seg] = true
		}
		for parent, segs := range children {
			if len(segs) <= collapseChildren {
				continue
			}
			if parent == "/" {
				return nil
			}
			for p := range set {
				if strings.HasPrefix(p, parent) {
					delete(set, p)
				}
			}
			set[parent] = true
			changed = true
		}
	}
	var out []string
	for p := range set {
		covered := false
		for q := range set {
			if q != p && match.PathUnder(p, q) {
				covered = true
				break
			}
		}
		if !covered {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// splitLast splits "/a/b/c/" or "/a/b/c" into "/a/b/" and "c".
func splitLast(p string) (parent, seg string) {
	t := strings.TrimSuffix(p, "/")
	i := strings.LastIndexByte(t, '/')
	if i < 0 {
		return "/", t
	}
	return t[:i+1], t[i+1:]
}

// wildcards merges entries alike but for the first label of their hosts,
// more than collapseChildren of them under one parent, into "*.parent":
// only where a wildcard may stand (never wider than a registrable domain,
// never on an IP).
func wildcards(ds []*draft) []*draft {
	type sig struct{ parent, rest string }
	groups := map[sig][]*draft{}
	var keys []sig
	for _, d := range ds {
		h := d.Entry.Host
		dot := strings.IndexByte(h, '.')
		if _, err := netip.ParseAddr(h); err == nil || dot < 0 {
			continue
		}
		k := sig{h[dot+1:], entrySig(d.Entry)}
		if groups[k] == nil {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], d)
	}
	merged := map[*draft]bool{}
	var out []*draft
	for _, k := range keys {
		g := groups[k]
		if len(g) <= collapseChildren {
			continue
		}
		if _, err := match.ParseHostPattern("*." + k.parent); err != nil {
			continue
		}
		w := &draft{runs: map[string]bool{}}
		w.Entry = g[0].Entry
		w.Entry.Host = "*." + k.parent
		for _, d := range g {
			w.merge(d)
			merged[d] = true
		}
		out = append(out, w)
	}
	for _, d := range ds {
		if !merged[d] {
			out = append(out, d)
		}
	}
	return out
}

func entrySig(e rules.Entry) string {
	var b strings.Builder
	for _, p := range e.Ports {
		b.WriteString(strconv.Itoa(p) + ",")
	}
	b.WriteString("|" + strings.Join(e.Methods, ",") + "|" + strings.Join(e.Paths, "\x00"))
	return b.String()
}

// finish sets each entry's runs, presets, risk and problems, and ranks the
// entries: highest risk first, then most used.
func finish(tenant, class string, ds []*draft, passthrough bool) []ProposedEntry {
	out := make([]ProposedEntry, 0, len(ds))
	for _, d := range ds {
		e := d.ProposedEntry
		e.Runs = slices.Sorted(maps.Keys(d.runs))
		e.Presets = coveringPresets(e.Entry)
		e.Risk, e.RiskWhy = exfilRisk(e.Entry)
		e.Problem = entryProblem(tenant, class, e.Entry, passthrough)
		out = append(out, e)
	}
	slices.SortStableFunc(out, func(a, b ProposedEntry) int {
		return cmp.Or(cmp.Compare(riskRank[b.Risk], riskRank[a.Risk]), cmp.Compare(b.Count, a.Count),
			cmp.Compare(a.Entry.Host, b.Entry.Host))
	})
	return out
}

// entryProblem checks the entry as the config would.
func entryProblem(tenant, class string, e rules.Entry, passthrough bool) string {
	cl := &rules.Class{Allow: []rules.Entry{e}}
	if passthrough {
		cl = &rules.Class{Passthrough: []rules.Entry{e}}
	}
	ps := (&rules.Policy{Tenants: map[string]*rules.Tenant{tenant: {Classes: map[string]*rules.Class{class: cl}}}}).Check()
	if len(ps) > 0 {
		return ps[0].Msg
	}
	return ""
}

// coveringPresets names the shipped presets one of whose entries matches
// the entry's host on all of its ports.
func coveringPresets(e rules.Entry) []string {
	var out []string
	for _, p := range rules.Presets() {
		for _, pe := range p.Entries {
			hp, err := match.ParseHostPattern(pe.Host)
			if pe.Host == "" || err != nil {
				continue
			}
			cand, err := match.ParseHostPattern(e.Host)
			if err != nil || !hp.Covers(cand) {
				continue
			}
			ports := pe.Ports
			if len(ports) == 0 {
				ports = []int{443}
			}
			if all(e.Ports, func(p int) bool { return slices.Contains(ports, p) }) {
				out = append(out, p.Name)
				break
			}
		}
	}
	return out
}

func all[T any](xs []T, f func(T) bool) bool {
	for _, x := range xs {
		if !f(x) {
			return false
		}
	}
	return true
}
