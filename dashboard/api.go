package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/sluice-egress/sluice/rules"
	"github.com/sluice-egress/sluice/store"
)

// RunManager creates and ends runs: it registers them with the policy engine, stores
// them and closes their tunnels. cmd implements it; the API checks who may ask.
type RunManager interface {
	// CreateRun derives and registers a run's policy, stores the run (its token's hash
	// only) and returns it with its token, which is never shown again. Invalid input
	// wraps ErrInvalid.
	CreateRun(ctx context.Context, r RunRequest) (RunCreated, error)
	// EndRun ends a run at once: its token stops working and its tunnels are closed.
	// Unknown ids wrap store.ErrNotFound.
	EndRun(ctx context.Context, id, actor string) (store.Run, error)
}

// RunRequest is what POST /api/runs asks for.
type RunRequest struct {
	Tenant, Class string
	// TTL ends the run; zero: DefaultRunTTL.
	TTL time.Duration
	// RepoRemote is the repository's git remote ("" for none).
	RepoRemote string
	// Manifests are the repository's manifests by path relative to its root
	// ("package.json", "svc/go.mod"), for derive.Derive.
	Manifests map[string]string
	// Extras are the run's own allow entries (within the class's run_extras).
	Extras []rules.Entry
	// Actor is who asks, for the audit log.
	Actor string
}

// RunCreated is a new run and what a sandbox needs to use it.
type RunCreated struct {
	Run store.Run
	// Token is the run's proxy token, returned once; only its hash is kept.
	Token string
	// ProxyURL carries the run's credentials (tenant:token).
	ProxyURL string
	// CAPEM is the tenant CA's certificate.
	CAPEM string
	// Env are the lines a container sets (proxy and trust variables).
	Env []string
	// Presets and Suggestions say what the repository selected and what it names that
	// the policy lacks.
	Presets     []rules.PresetUse
	Suggestions []rules.Suggestion
}

// Limits of the API.
const (
	// DefaultRunTTL and MaxRunTTL bound a run's life.
	DefaultRunTTL = time.Hour
	MaxRunTTL     = 7 * 24 * time.Hour
	// DefaultAccessTTL and MaxAccessTTL bound an access request's (and its grant's) life.
	DefaultAccessTTL = 24 * time.Hour
	MaxAccessTTL     = 90 * 24 * time.Hour

	maxRunBody       = 4 << 20 // manifests
	maxBody          = 64 << 10
	maxManifests     = 200
	maxJustification = 2000
)

// Errors of the API, besides the store's.
var (
	// ErrInvalid marks a request the caller must fix (400). RunManager
	// implementations wrap it.
	ErrInvalid = errors.New("invalid request")
	// errForbidden: the principal may not do this (403).
	errForbidden = errors.New("forbidden")
	// errUnavailable: the server is not set up for this (503).
	errUnavailable = errors.New("unavailable")
	// errTooLarge: the body is over its limit (413).
	errTooLarge = errors.New("request body too large")
)

// errorStatus maps error kinds to HTTP statuses, most specific first. Anything else is
// a 500 whose details go to the log, not to the client.
var errorStatus = []struct {
	err  error
	code int
}{
	{store.ErrNotFound, http.StatusNotFound},
	{store.ErrConflict, http.StatusConflict},
	{store.ErrInvalid, http.StatusBadRequest},
	{ErrInvalid, http.StatusBadRequest},
	{errForbidden, http.StatusForbidden},
	{errTooLarge, http.StatusRequestEntityTooLarge},
	{errUnavailable, http.StatusServiceUnavailable},
}

// statusOf returns the status for err and whether its text may be shown.
func statusOf(err error) (int, bool) {
	for _, k := range errorStatus {
		if errors.Is(err, k.err) {
			return k.code, true
		}
	}
	return http.StatusInternalServerError, false
}

// api holds the handlers' shared state.
type api struct{ o Options }

// mountAPI registers the JSON API's handlers on r, which is already behind
// Auth.Middleware (every handler has a Principal).
func mountAPI(r chi.Router, o Options) {
	a := &api{o: o}
	r.NotFound(func(w http.ResponseWriter, req *http.Request) {
		apiError(w, http.StatusNotFound, "no such API endpoint (see docs/api.md)")
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, req *http.Request) {
		apiError(w, http.StatusMethodNotAllowed, "method not allowed on this endpoint")
	})
	r.Get("/incidents", a.listIncidents)
	r.Get("/incidents/{id}", a.getIncident)
	r.Post("/incidents/{id}/triage", a.triage)
	r.Post("/runs", a.createRun)
	r.Get("/runs", a.listRuns)
	r.Get("/runs/{id}", a.getRun)
	r.Delete("/runs/{id}", a.endRun)
	r.Post("/access-requests", a.createAccess)
	r.Get("/access-requests", a.listAccess)
	r.Get("/access-requests/{id}", a.getAccess)
	r.Post("/access-requests/{id}/decision", a.decide)
	r.Get("/audit", a.listAudit)
}

// fail writes err as {"error": "..."} with its status; a 5xx is logged and its
// details are not shown.
func (a *api) fail(w http.ResponseWriter, r *http.Request, err error) {
	code, show := statusOf(err)
	msg := err.Error()
	if !show {
		a.o.logger().Error("api: request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		msg = "internal error; the server log has the details"
	}
	msg = strings.TrimPrefix(msg, "store: ")
	apiError(w, code, msg)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

// readJSON decodes the body strictly (unknown fields are errors) within limit bytes.
func readJSON(w http.ResponseWriter, r *http.Request, limit int64, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, limit))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return fmt.Errorf("%w: at most %d bytes", errTooLarge, limit)
		}
		return fmt.Errorf("%w: body: %v", ErrInvalid, err)
	}
	if dec.More() {
		return fmt.Errorf("%w: body: one JSON object expected", ErrInvalid)
	}
	return nil
}

// respond writes v as JSON with code, or err (see fail) when err is not nil.
func (a *api) respond(w http.ResponseWriter, r *http.Request, code int, v any, err error) {
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, code, v)
}

// jsonList maps xs to their API form; never nil, so that an empty list is [] and not null.
func jsonList[T, J any](xs []T, out func(T) J) []J {
	js := make([]J, 0, len(xs))
	for _, x := range xs {
		js = append(js, out(x))
	}
	return js
}

// visibleTo returns v, fetched by id with err, if p may see its tenant's records, else
// the same not-found answer as for an unknown id (see hidden).
func visibleTo[T any](p Principal, what, id string, v T, tenant string, err error) (T, error) {
	if err != nil {
		return v, err
	}
	if !p.SeesTenant(tenant) {
		var zero T
		return zero, hidden(what, id)
	}
	return v, nil
}

// listQuery reads what a listing takes from the query: the tenant it is scoped to (see
// scopeTenant) and the limit (def when not given).
func listQuery(r *http.Request, def int) (tenant string, limit int, err error) {
	q := r.URL.Query()
	if tenant, err = scopeTenant(principal(r), q.Get("tenant")); err != nil {
		return "", 0, err
	}
	limit, err = atoi(q.Get("limit"), "limit", def)
	return tenant, limit, err
}

func principal(r *http.Request) Principal {
	p, _ := PrincipalFrom(r.Context())
	return p
}

// scopeTenant returns the tenant a listing is limited to: a tenant principal's own
// (asking for another is forbidden), or what a staff principal asked for ("" for all).
func scopeTenant(p Principal, asked string) (string, error) {
	if p.AtLeast(RoleViewer) {
		return asked, nil
	}
	if !p.AtLeast(RoleTenant) {
		return "", errForbidden
	}
	if asked != "" && asked != p.Tenant {
		return "", fmt.Errorf("%w: tenant %s may list only its own", errForbidden, p.Tenant)
	}
	return p.Tenant, nil
}

// hidden is the not-found error for what p may not see: the same answer as for an
// unknown id, so that ids of other tenants cannot be probed.
func hidden(what, id string) error { return fmt.Errorf("%w: %s %s", store.ErrNotFound, what, id) }

func atoi(q, name string, def int) (int, error) {
	if q == "" {
		return def, nil
	}
	n, err := strconv.Atoi(q)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%w: %s must be a non-negative number", ErrInvalid, name)
	}
	return n, nil
}

func apiTime(q, name string) (time.Time, error) {
	if q == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, q)
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: %s must be an RFC 3339 time such as 2025-01-02T15:04:05Z", ErrInvalid, name)
	}
	return t, nil
}

// ---- incidents

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

// ---- runs

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
	out := runCreatedJSON{runJSON: runOut(c.Run, a.o.now()), Token: c.Token, ProxyURL: c.ProxyURL, CAPEM: c.CAPEM,
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
func (b runBody) request(p Principal) (RunRequest, error) {
	switch {
	case p.AtLeast(RoleAdmin):
	case p.AtLeast(RoleTenant):
		if b.Tenant == "" {
			b.Tenant = p.Tenant
		}
		if b.Tenant != p.Tenant {
			return RunRequest{}, fmt.Errorf("%w: tenant %s may create runs only for itself", errForbidden, p.Tenant)
		}
	default:
		return RunRequest{}, fmt.Errorf("%w: creating runs needs a tenant token or the admin role", errForbidden)
	}
	if b.Tenant == "" {
		return RunRequest{}, fmt.Errorf("%w: tenant is required", ErrInvalid)
	}
	if b.Class == "" {
		b.Class = rules.DefaultClass
	}
	ttl := DefaultRunTTL
	if b.TTL != "" {
		d, err := time.ParseDuration(b.TTL)
		if err != nil || d <= 0 || d > MaxRunTTL {
			return RunRequest{}, fmt.Errorf("%w: ttl must be a duration such as 1h, at most %s", ErrInvalid, MaxRunTTL)
		}
		ttl = d
	}
	if len(b.Manifests) > maxManifests {
		return RunRequest{}, fmt.Errorf("%w: at most %d manifests", ErrInvalid, maxManifests)
	}
	for path := range b.Manifests {
		if !fs.ValidPath(path) || path == "." {
			return RunRequest{}, fmt.Errorf("%w: manifest path %q: want a relative path such as svc/package.json", ErrInvalid, path)
		}
	}
	return RunRequest{Tenant: b.Tenant, Class: b.Class, TTL: ttl, RepoRemote: b.RepoRemote,
		Manifests: b.Manifests, Extras: b.Extras, Actor: p.Name}, nil
}

func (a *api) listRuns(w http.ResponseWriter, r *http.Request) {
	tenant, limit, err := listQuery(r, 100)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	active := r.URL.Query().Get("active")
	f := store.RunFilter{Tenant: tenant, Active: active == "true" || active == "1", Limit: limit}
	runs, err := a.o.Store.ListRuns(r.Context(), f)
	now := a.o.now()
	a.respond(w, r, http.StatusOK, struct {
		Runs []runJSON `json:"runs"`
	}{Runs: jsonList(runs, func(run store.Run) runJSON { return runOut(run, now) })}, err)
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
	a.respond(w, r, http.StatusOK, runOut(run, a.o.now()), err)
}

// ---- access requests

type accessJSON struct {
	ID            string    `json:"id"`
	Tenant        string    `json:"tenant"`
	Host          string    `json:"host"`
	Ports         []int     `json:"ports,omitempty"`
	Methods       []string  `json:"methods,omitempty"`
	Paths         []string  `json:"paths,omitempty"`
	Justification string    `json:"justification"`
	ExpiresAt     time.Time `json:"expires_at"`
	State         string    `json:"state"`
	Reviewer      string    `json:"reviewer,omitempty"`
	Reason        string    `json:"reason,omitempty"`
	CreatedAt     time.Time `json:"created_at"`
	DecidedAt     time.Time `json:"decided_at,omitzero"`
}

func accessOut(x store.AccessRequest) accessJSON {
	return accessJSON{ID: x.ID, Tenant: x.Tenant, Host: x.Host, Ports: x.Ports, Methods: x.Methods, Paths: x.Paths,
		Justification: x.Justification, ExpiresAt: x.ExpiresAt, State: x.State, Reviewer: x.Reviewer,
		Reason: x.Reason, CreatedAt: x.CreatedAt, DecidedAt: x.DecidedAt}
}

// accessBody is POST /api/access-requests.
type accessBody struct {
	Tenant        string    `json:"tenant"`
	Host          string    `json:"host"`
	Ports         []int     `json:"ports"`
	Methods       []string  `json:"methods"`
	Paths         []string  `json:"paths"`
	Justification string    `json:"justification"`
	ExpiresAt     time.Time `json:"expires_at"`
	TTL           string    `json:"ttl"`
}

// GrantOf is the policy grant of an approved access request: its entry for every class
// of its tenant, until it expires.
func GrantOf(x store.AccessRequest) rules.Grant {
	return rules.Grant{ID: x.ID, Tenant: x.Tenant, Expires: x.ExpiresAt,
		Entry: rules.Entry{Host: x.Host, Ports: x.Ports, Methods: x.Methods, Paths: x.Paths}}
}

func (a *api) createAccess(w http.ResponseWriter, r *http.Request) {
	p := principal(r)
	var b accessBody
	if err := readJSON(w, r, maxBody, &b); err != nil {
		a.fail(w, r, err)
		return
	}
	x, err := a.accessRequest(p, b)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	x, err = a.o.Store.CreateAccessRequest(r.Context(), x)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if _, err := a.o.Store.AppendAudit(r.Context(), store.AuditEntry{Actor: p.Name, Action: "access.requested",
		Tenant: x.Tenant, Target: x.ID, Detail: x.Host}); err != nil {
		a.o.logger().Error("api: audit", "action", "access.requested", "request", x.ID, "err", err)
	}
	w.Header().Set("Location", "/api/access-requests/"+x.ID)
	writeJSON(w, http.StatusCreated, accessOut(x))
}

// accessRequest checks who asks (a tenant for itself, or an admin on a tenant's
// behalf) and that the request could become a valid grant.
func (a *api) accessRequest(p Principal, b accessBody) (store.AccessRequest, error) {
	switch {
	case p.AtLeast(RoleAdmin):
	case p.AtLeast(RoleTenant):
		if b.Tenant == "" {
			b.Tenant = p.Tenant
		}
		if b.Tenant != p.Tenant {
			return store.AccessRequest{}, fmt.Errorf("%w: tenant %s may file requests only for itself", errForbidden, p.Tenant)
		}
	default:
		return store.AccessRequest{}, fmt.Errorf("%w: filing access requests needs a tenant token or the admin role", errForbidden)
	}
	if b.Tenant == "" {
		return store.AccessRequest{}, fmt.Errorf("%w: tenant is required", ErrInvalid)
	}
	if e := a.o.engine(); e != nil && !containsString(e.Tenants(), b.Tenant) {
		return store.AccessRequest{}, fmt.Errorf("%w: unknown tenant %q", ErrInvalid, b.Tenant)
	}
	b.Justification = strings.TrimSpace(b.Justification)
	if b.Justification == "" || len(b.Justification) > maxJustification {
		return store.AccessRequest{}, fmt.Errorf("%w: a justification is required (at most %d bytes)", ErrInvalid, maxJustification)
	}
	now := a.o.now()
	exp := b.ExpiresAt
	switch {
	case !exp.IsZero() && b.TTL != "":
		return store.AccessRequest{}, fmt.Errorf("%w: give expires_at or ttl, not both", ErrInvalid)
	case b.TTL != "":
		d, err := time.ParseDuration(b.TTL)
		if err != nil || d <= 0 {
			return store.AccessRequest{}, fmt.Errorf("%w: ttl must be a duration such as 24h", ErrInvalid)
		}
		exp = now.Add(d)
	case exp.IsZero():
		exp = now.Add(DefaultAccessTTL)
	}
	if !exp.After(now) || exp.Sub(now) > MaxAccessTTL {
		return store.AccessRequest{}, fmt.Errorf("%w: the expiry must be in the future and within %s", ErrInvalid, MaxAccessTTL)
	}
	x := store.AccessRequest{Tenant: b.Tenant, Host: strings.TrimSpace(b.Host), Ports: b.Ports, Methods: b.Methods,
		Paths: b.Paths, Justification: b.Justification, ExpiresAt: exp}
	if err := rules.CheckGrant(GrantOf(x)); err != nil {
		return store.AccessRequest{}, fmt.Errorf("%w: %v", ErrInvalid, strings.TrimPrefix(err.Error(), "rules: "))
	}
	return x, nil
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func (a *api) listAccess(w http.ResponseWriter, r *http.Request) {
	tenant, limit, err := listQuery(r, 100)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	f := store.AccessFilter{Tenant: tenant, State: r.URL.Query().Get("state"), Limit: limit}
	xs, err := a.o.Store.ListAccessRequests(r.Context(), f)
	a.respond(w, r, http.StatusOK, struct {
		Requests []accessJSON `json:"requests"`
	}{Requests: jsonList(xs, accessOut)}, err)
}

func (a *api) visibleAccess(ctx context.Context, p Principal, id string) (store.AccessRequest, error) {
	x, err := a.o.Store.GetAccessRequest(ctx, id)
	return visibleTo(p, "access request", id, x, x.Tenant, err)
}

func (a *api) getAccess(w http.ResponseWriter, r *http.Request) {
	x, err := a.visibleAccess(r.Context(), principal(r), chi.URLParam(r, "id"))
	a.respond(w, r, http.StatusOK, accessOut(x), err)
}

func (a *api) decide(w http.ResponseWriter, r *http.Request) {
	p := principal(r)
	id := chi.URLParam(r, "id")
	if _, err := a.visibleAccess(r.Context(), p, id); err != nil {
		a.fail(w, r, err)
		return
	}
	var b struct {
		Approve *bool  `json:"approve"`
		Reason  string `json:"reason"`
	}
	if err := readJSON(w, r, maxBody, &b); err != nil {
		a.fail(w, r, err)
		return
	}
	if b.Approve == nil {
		a.fail(w, r, fmt.Errorf("%w: approve (true or false) is required", ErrInvalid))
		return
	}
	if err := decideAccess(r.Context(), a.o, p, id, *b.Approve, strings.TrimSpace(b.Reason)); err != nil {
		a.fail(w, r, err)
		return
	}
	x, err := a.o.Store.GetAccessRequest(r.Context(), id)
	a.respond(w, r, http.StatusOK, accessOut(x), err)
}

// decideAccess approves or denies a pending access request for p (reviewer or admin);
// the store records the decision in the audit log in the same transaction. Then the
// policy's grants are refreshed (Options.GrantsChanged), so that an approval applies
// at once; a failed refresh is logged (the periodic refresh catches up) and the
// decision stands.
func decideAccess(ctx context.Context, o Options, p Principal, id string, approve bool, reason string) error {
	if !p.AtLeast(RoleReviewer) {
		return fmt.Errorf("%w: deciding access requests needs the reviewer role", errForbidden)
	}
	if o.Store == nil {
		return fmt.Errorf("%w: no store", errUnavailable)
	}
	x, err := o.Store.DecideAccessRequest(ctx, id, store.AccessDecision{Approve: approve, Reviewer: p.Name, Reason: reason})
	if err != nil {
		return err
	}
	o.logger().Info("access request decided", "request", id, "tenant", x.Tenant, "state", x.State, "reviewer", p.Name)
	if o.GrantsChanged != nil {
		if err := o.GrantsChanged(context.WithoutCancel(ctx)); err != nil {
			o.logger().Error("grants not refreshed after a decision: the periodic refresh will apply it", "request", id, "err", err)
		}
	}
	return nil
}

// ---- audit

type auditJSON struct {
	ID     int64     `json:"id"`
	Time   time.Time `json:"time"`
	Actor  string    `json:"actor"`
	Action string    `json:"action"`
	Tenant string    `json:"tenant,omitempty"`
	Target string    `json:"target,omitempty"`
	Detail string    `json:"detail,omitempty"`
}

// listAudit is staff only: the log names reviewers and every tenant's actions.
func (a *api) listAudit(w http.ResponseWriter, r *http.Request) {
	if !principal(r).AtLeast(RoleViewer) {
		a.fail(w, r, fmt.Errorf("%w: the audit log is for staff", errForbidden))
		return
	}
	q := r.URL.Query()
	f := store.AuditFilter{Tenant: q.Get("tenant")}
	var err error
	if f.Limit, err = atoi(q.Get("limit"), "limit", 100); err == nil {
		var b int
		b, err = atoi(q.Get("before"), "before", 0)
		f.Before = int64(b)
	}
	if err != nil {
		a.fail(w, r, err)
		return
	}
	es, err := a.o.Store.ListAudit(r.Context(), f)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	out := struct {
		Entries []auditJSON `json:"entries"`
		Next    string      `json:"next,omitempty"`
	}{Entries: jsonList(es, func(e store.AuditEntry) auditJSON {
		return auditJSON{ID: e.ID, Time: e.Time, Actor: e.Actor, Action: e.Action,
			Tenant: e.Tenant, Target: e.Target, Detail: e.Detail}
	})}
	if n := len(es); n > 0 && n == clampAuditLimit(f.Limit) {
		out.Next = strconv.FormatInt(es[n-1].ID, 10)
	}
	writeJSON(w, http.StatusOK, out)
}

func clampAuditLimit(n int) int {
	switch {
	case n <= 0:
		return 100
	case n > 1000:
		return 1000
	}
	return n
}
