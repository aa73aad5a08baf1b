package rules

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// grantTable holds the tenants' approved access requests, shared by the engines that
// replace one another on reload (ShareRuns), so that a reload keeps them. SetGrants
// swaps the whole set at once; Decide reads it without a lock.
type grantTable struct {
	cur atomic.Pointer[grantSet]
}

// grantSet is one immutable generation of grants.
type grantSet struct {
	list     []Grant
	byTenant map[string][]*liveGrant
}

// liveGrant is one compiled grant.
type liveGrant struct {
	class       string // "" for every class of the tenant
	run         string // "" for every run of the tenant
	passthrough bool
	expires     time.Time
	rule        *rule
}

// SetGrants replaces the engine's grants (approved access requests) with gs, atomically:
// a query is decided on the old set or the new one, never on a mix. Each grant adds its
// entry to its tenant's classes (Grant.Class "" for all of them) until it expires, with
// Origin{Kind: OriginGrant, Grant: g.ID}. A grant is validated as strictly as a config
// entry; one that fails (no id or tenant, a preset, allow_addresses, a bad host) is left
// out, and the error names it: a bad grant grants nothing, the others still apply. The
// set is shared with the engines that share e's runs (ShareRuns), so reloads keep it.
func (e *Engine) SetGrants(gs []Grant) error {
	set := &grantSet{byTenant: map[string][]*liveGrant{}}
	var errs []error
	for _, g := range gs {
		name := fmt.Sprintf("grant %s", g.ID)
		switch {
		case g.ID == "" || g.Tenant == "":
			errs = append(errs, fmt.Errorf("rules: %s: needs an id and a tenant", name))
			continue
		case g.Class != "" && !nameRE.MatchString(g.Class):
			errs = append(errs, fmt.Errorf("rules: %s: bad class %q", name, g.Class))
			continue
		case g.Run != "" && !runIDRE.MatchString(g.Run):
			errs = append(errs, fmt.Errorf("rules: %s: bad run %q", name, g.Run))
			continue
		}
		if err := checkOwnEntry(name, g.Entry, g.Passthrough); err != nil {
			errs = append(errs, err)
			continue
		}
		en := cloneEntry(g.Entry)
		en.Origin = Origin{Kind: OriginGrant, Grant: g.ID, Run: g.Run}
		r := compileRule(en)
		set.byTenant[g.Tenant] = append(set.byTenant[g.Tenant], &liveGrant{
			class: g.Class, run: g.Run, passthrough: g.Passthrough, expires: g.Expires, rule: r,
		})
		kept := g
		kept.Entry = cloneEntry(g.Entry)
		set.list = append(set.list, kept)
	}
	e.grantTable().cur.Store(set)
	return errors.Join(errs...)
}

// Grants returns copies of the grants in force: set by SetGrants, valid and not expired.
func (e *Engine) Grants() []Grant {
	set := e.grantTable().cur.Load()
	if set == nil {
		return nil
	}
	now := time.Now()
	var out []Grant
	for _, g := range set.list {
		if !g.Expires.IsZero() && !now.Before(g.Expires) {
			continue
		}
		c := g
		c.Entry = cloneEntry(g.Entry)
		out = append(out, c)
	}
	return out
}

// grantTable returns the engine's table; an Engine not built by Compile has none, and
// gets an empty one that nothing else shares.
func (e *Engine) grantTable() *grantTable {
	if e.grants == nil {
		return &grantTable{}
	}
	return e.grants
}

// classFor returns the grants of tenant that apply to className and run ("" for none)
// and have not expired at now, as a class to decide on; nil when there are none (the
// common case: no allocation).
func (gt *grantTable) classFor(tenant, className, run string, now func() time.Time) *class {
	if gt == nil {
		return nil
	}
	set := gt.cur.Load()
	if set == nil {
		return nil
	}
	list := set.byTenant[tenant]
	if len(list) == 0 {
		return nil
	}
	t := now()
	var c *class
	for _, g := range list {
		if (g.class != "" && g.class != className) || (g.run != "" && g.run != run) || (!g.expires.IsZero() && !t.Before(g.expires)) {
			continue
		}
		if c == nil {
			c = &class{}
		}
		if g.passthrough {
			c.passthrough = append(c.passthrough, g.rule)
		} else {
			c.allow = append(c.allow, g.rule)
		}
	}
	return c
}

// CheckGrant validates a grant as SetGrants would, without installing it: for the API
// that files an access request, so that a request that could never apply is refused
// when it is made, not when it is approved.
func CheckGrant(g Grant) error {
	if g.ID == "" {
		g.ID = "(new)"
	}
	return (&Engine{}).SetGrants([]Grant{g})
}
