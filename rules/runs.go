package rules

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sync"
	"time"
)

// Run is a run registered with an Engine: its token (hashed) identifies it, and its own
// entries add to its class's.
type Run struct {
	// ID names the run (letters, digits, '-', '_', '.'; at most 64).
	ID string
	// Tenant and Class the run belongs to; both must exist in the engine.
	Tenant, Class string
	// TokenHash is HashToken of the run's token; the token itself is never kept.
	TokenHash [sha256.Size]byte
	// Entries and Passthrough are the run's own entries beyond its class's config
	// (EffectivePolicy.RunEntries): derived presets expanded, grants, extras. They may
	// not name presets or allow_addresses.
	Entries, Passthrough []Entry
	// Expires ends the run: afterwards its token identifies nobody. Zero: no end.
	Expires time.Time
}

// HashToken returns the SHA-256 of a token, the form in which runs keep it.
func HashToken(token string) [sha256.Size]byte { return sha256.Sum256([]byte(token)) }

// runTable is the concurrent-safe registry of runs, shared by the engines that replace
// one another on reload (ShareRuns). Reads on the hot path take no lock.
type runTable struct {
	mu     sync.Mutex // serialises writers
	byID   sync.Map   // string -> *liveRun
	byHash sync.Map   // [32]byte -> *liveRun
	gone   endedRuns  // removed runs' token hashes, for ErrRunEnded
}

type liveRun struct {
	id, tenant, class string
	hash              [sha256.Size]byte
	expires           time.Time
	own               *class
}

func (r *liveRun) expired(now func() time.Time) bool {
	return !r.expires.IsZero() && !now().Before(r.expires)
}

var runIDRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// AddRun registers a run. Its tenant and class must exist in e; its entries are
// validated as strictly as the config. The run is visible to every engine sharing e's
// run table (see ShareRuns).
func (e *Engine) AddRun(r Run) error {
	if !runIDRE.MatchString(r.ID) {
		return fmt.Errorf("rules: add run: bad run id %q", r.ID)
	}
	t := e.tenants[r.Tenant]
	if t == nil || t.classes[r.Class] == nil {
		return fmt.Errorf("rules: add run %s: unknown tenant or class %q/%q", r.ID, r.Tenant, r.Class)
	}
	if r.TokenHash == ([sha256.Size]byte{}) {
		return fmt.Errorf("rules: add run %s: no token hash", r.ID)
	}
	if r.TokenHash == t.digest {
		return fmt.Errorf("rules: add run %s: the run token is the tenant's token", r.ID)
	}
	var errs []error
	check := func(list []Entry, what string, passthrough bool) {
		for i, en := range list {
			if en.Host != "" {
				en.Preset = "" // an expanded preset entry: the name is provenance only
			}
			if err := checkOwnEntry(fmt.Sprintf("run %s %s %d", r.ID, what, i), en, passthrough); err != nil {
				errs = append(errs, err)
			}
		}
	}
	check(r.Entries, "entry", false)
	check(r.Passthrough, "passthrough", true)
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	lr := &liveRun{id: r.ID, tenant: r.Tenant, class: r.Class, hash: r.TokenHash, expires: r.Expires,
		own: &class{allow: compileRules(withRun(r.Entries, r.ID)), passthrough: compileRules(withRun(r.Passthrough, r.ID))}}
	rt := e.runs
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if _, dup := rt.byID.Load(r.ID); dup {
		return fmt.Errorf("rules: add run %s: a run with this id exists", r.ID)
	}
	if _, dup := rt.byHash.Load(r.TokenHash); dup {
		return fmt.Errorf("rules: add run %s: token already in use", r.ID)
	}
	rt.byID.Store(r.ID, lr)
	rt.byHash.Store(r.TokenHash, lr)
	return nil
}

func withRun(entries []Entry, id string) []Entry {
	out := make([]Entry, 0, len(entries))
	for _, en := range entries {
		c := cloneEntry(en)
		if c.Origin.Kind == "" {
			c.Origin.Kind = OriginRun
		}
		c.Origin.Run = id
		out = append(out, c)
	}
	return out
}

// RemoveRun forgets a run: its token identifies nobody from now on, and Decide denies
// its identity. It reports whether the run was registered.
func (e *Engine) RemoveRun(id string) bool {
	rt := e.runs
	rt.mu.Lock()
	defer rt.mu.Unlock()
	v, ok := rt.byID.LoadAndDelete(id)
	if ok {
		rt.byHash.Delete(v.(*liveRun).hash)
		rt.gone.add(v.(*liveRun))
	}
	return ok
}

// RunIDs returns the registered runs' ids, sorted (expired ones included until removed).
func (e *Engine) RunIDs() []string {
	var ids []string
	e.runs.byID.Range(func(k, _ any) bool {
		ids = append(ids, k.(string))
		return true
	})
	slices.Sort(ids)
	return ids
}

// ShareRuns makes e use old's run table and grants (SetGrants), so that runs and grants
// survive a reload: their own entries stay, their class entries come from e. Call it
// before e serves requests.
func (e *Engine) ShareRuns(old *Engine) {
	if old != nil && old.runs != nil {
		e.runs = old.runs
	}
	if old != nil && old.grants != nil {
		e.grants = old.grants
	}
}

func (rt *runTable) byToken(h [sha256.Size]byte) *liveRun {
	v, ok := rt.byHash.Load(h)
	if !ok {
		return nil
	}
	return v.(*liveRun)
}

func (rt *runTable) get(id string) *liveRun {
	v, ok := rt.byID.Load(id)
	if !ok {
		return nil
	}
	return v.(*liveRun)
}

// RunEntries returns copies of a registered run's own entries (beyond its class's),
// with their origins, for the dashboard's policy and run pages; ok is false for an
// unknown run.
func (e *Engine) RunEntries(id string) (tenant, class string, allow, passthrough []Entry, ok bool) {
	v, found := e.runs.byID.Load(id)
	if !found {
		return "", "", nil, nil, false
	}
	lr := v.(*liveRun)
	cp := func(rs []*rule) []Entry {
		out := make([]Entry, 0, len(rs))
		for _, r := range rs {
			out = append(out, cloneEntry(*r.entry))
		}
		return out
	}
	return lr.tenant, lr.class, cp(lr.own.allow), cp(lr.own.passthrough), true
}
