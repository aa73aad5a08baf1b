package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/sluice-egress/sluice/rules"
	"github.com/sluice-egress/sluice/runs"
	"github.com/sluice-egress/sluice/store"
)

// RunManager creates and ends runs and decides access requests: runs.Service,
// which registers runs and grants with the policy engine, stores them and closes
// their tunnels. The API checks who may ask.
type RunManager interface {
	// CreateRun derives and registers a run's policy, stores the run (its token's hash
	// only) and returns it with its token, which is never shown again. Invalid input
	// wraps ErrInvalid.
	CreateRun(ctx context.Context, r runs.Request) (runs.Created, error)
	// EndRun ends a run at once: its token stops working and its tunnels are closed.
	// Unknown ids wrap store.ErrNotFound.
	EndRun(ctx context.Context, id, actor string) (runs.Run, error)
	// DecideAccess records a reviewer's decision on a pending access request and
	// applies the grants at once.
	DecideAccess(ctx context.Context, d runs.Decision) (runs.AccessRequest, error)
	// RequestAccess files a pending access request; the caller checked that the
	// actor may file for its tenant. Invalid input wraps ErrInvalid.
	RequestAccess(ctx context.Context, in runs.AccessInput) (runs.AccessRequest, error)
}

var _ RunManager = (*runs.Service)(nil)

type runJSON struct {
	ID         string    `json:"id"`
	Tenant     string    `json:"tenant"`
	Class      string    `json:"class"`
	Created    time.Time `json:"created"`
	Expires    time.Time `json:"expires,omitzero"`
	Ended      time.Time `json:"ended,omitzero"`
	Active     bool      `json:"active"`
	RepoRemote string    `json:"repo_remote,omitempty"`
	// Manifests lists the manifest paths the run declared; Extra its own entries.
	Manifests json.RawMessage `json:"manifests,omitempty"`
	Extra     json.RawMessage `json:"extras,omitempty"`
}

func runOut(r store.Run, now time.Time) runJSON {
	return runJSON{ID: r.ID, Tenant: r.Tenant, Class: r.Class, Created: r.Created, Expires: r.Expires,
		Ended: r.Ended, Active: r.Ended.IsZero() && (r.Expires.IsZero() || now.Before(r.Expires)),
		RepoRemote: r.RepoRemote, Manifests: r.Manifests, Extra: r.Extra}
}

type runCreatedJSON struct {
	runJSON
	Token       string             `json:"token"`
	ProxyURL    string             `json:"proxy_url"`
	CAPEM       string             `json:"ca_pem"`
	Env         []string           `json:"env"`
	Presets     []rules.PresetUse  `json:"presets"`
	Suggestions []rules.Suggestion `json:"suggestions"`
}

// runBody is POST /api/runs.
type runBody struct {
	Tenant     string            `json:"tenant"`
	Class      string            `json:"class"`
	TTL        string            `json:"ttl"`
	RepoRemote string            `json:"repo_remote"`
	Manifests  map[string]string `json:"manifests"`
	Extras     []rules.Entry     `json:"extras"`
	// SandboxAddr or SandboxNetwork: where the run's sandbox is, for the resolver and
	// the transparent listeners (runs.ParseSandbox).
	SandboxAddr    string `json:"sandbox_addr"`
	SandboxNetwork string `json:"sandbox_network"`
}

func (a *api) createRun(w http.ResponseWriter, r *http.Request) {
	p := principal(r)
	var body runBody
	if err := readJSON(w, r, maxRunBody, &body); err != nil {
		a.fail(w, r, err)
		return
	}
	req, err := body.request(p)
	if err == nil && a.o.Runs == nil {
		err = fmt.Errorf("%w: this server does not manage runs", errUnavailable)
	}
	if err != nil {
		a.fail(w, r, err)
		return
	}
	c, err := a.o.Runs.CreateRun(r.Context(), req)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	out := runCreatedJSON{runJSON: runOut(store.Run(c.Run), a.o.now()), Token: c.Token, ProxyURL: c.ProxyURL, CAPEM: c.CAPEM,
		Env: c.Env, Presets: c.Presets, Suggestions: c.Suggestions}
	if out.Presets == nil {
		out.Presets = []rules.PresetUse{}
	}
	if out.Suggestions == nil {
		out.Suggestions = []rules.Suggestion{}
	}
	w.Header().Set("Location", "/api/runs/"+c.Run.ID)
	writeJSON(w, http.StatusCreated, out)
}

// request checks the body and who asks: admins create runs for any tenant, a tenant
// principal for its own only.
func (b runBody) request(p Principal) (runs.Request, error) {
	var err error
	if b.Tenant, err = actingFor(p, b.Tenant, "create runs", "creating runs"); err != nil {
		return runs.Request{}, err
	}
	if b.Tenant == "" {
		return runs.Request{}, fmt.Errorf("%w: tenant is required", ErrInvalid)
	}
	if b.Class == "" {
		b.Class = rules.DefaultClass
	}
	ttl := DefaultRunTTL
	if b.TTL != "" {
		d, err := time.ParseDuration(b.TTL)
		if err != nil || d <= 0 || d > MaxRunTTL {
			return runs.Request{}, fmt.Errorf("%w: ttl must be a duration such as 1h, at most %s", ErrInvalid, MaxRunTTL)
		}
		ttl = d
	}
	if len(b.Manifests) > maxManifests {
		return runs.Request{}, fmt.Errorf("%w: at most %d manifests", ErrInvalid, maxManifests)
	}
	for path := range b.Manifests {
		if !fs.ValidPath(path) || path == "." {
			return runs.Request{}, fmt.Errorf("%w: manifest path %q: want a relative path such as svc/package.json", ErrInvalid, path)
		}
	}
	sandbox, err := runs.ParseSandbox(b.SandboxAddr, b.SandboxNetwork)
	if err != nil {
		return runs.Request{}, err
	}
	return runs.Request{Tenant: b.Tenant, Class: b.Class, TTL: ttl, RepoRemote: b.RepoRemote,
		Manifests: b.Manifests, Extras: b.Extras, Sandbox: sandbox, Actor: p.Name}, nil
}

func (a *api) listRuns(w http.ResponseWriter, r *http.Request) {
	tenant, limit, err := listQuery(r, 100)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	active := r.URL.Query().Get("active")
	f := store.RunFilter{Tenant: tenant, Active: active == "true" || active == "1", Limit: limit}
	rs, err := a.o.Store.ListRuns(r.Context(), f)
	now := a.o.now()
	a.respond(w, r, http.StatusOK, struct {
		Runs []runJSON `json:"runs"`
	}{Runs: jsonList(rs, func(run store.Run) runJSON { return runOut(run, now) })}, err)
}

func (a *api) visibleRun(ctx context.Context, p Principal, id string) (store.Run, error) {
	run, err := a.o.Store.GetRun(ctx, id)
	return visibleTo(p, "run", id, run, run.Tenant, err)
}

func (a *api) getRun(w http.ResponseWriter, r *http.Request) {
	run, err := a.visibleRun(r.Context(), principal(r), chi.URLParam(r, "id"))
	a.respond(w, r, http.StatusOK, runOut(run, a.o.now()), err)
}

func (a *api) endRun(w http.ResponseWriter, r *http.Request) {
	p := principal(r)
	id := chi.URLParam(r, "id")
	if _, err := a.visibleRun(r.Context(), p, id); err != nil {
		a.fail(w, r, err)
		return
	}
	if !p.AtLeast(RoleAdmin) && !p.AtLeast(RoleTenant) {
		a.fail(w, r, fmt.Errorf("%w: ending runs needs a tenant token or the admin role", errForbidden))
		return
	}
	if a.o.Runs == nil {
		a.fail(w, r, fmt.Errorf("%w: this server does not manage runs", errUnavailable))
		return
	}
	run, err := a.o.Runs.EndRun(r.Context(), id, p.Name)
	a.respond(w, r, http.StatusOK, runOut(store.Run(run), a.o.now()), err)
}
