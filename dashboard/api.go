package dashboard

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/sluice-egress/sluice/runs"
	"github.com/sluice-egress/sluice/store"
)

// Limits of the API.
const (
	// DefaultRunTTL and MaxRunTTL bound a run's life.
	DefaultRunTTL = time.Hour
	MaxRunTTL     = 7 * 24 * time.Hour
	// DefaultAccessTTL and MaxAccessTTL bound an access request's (and its grant's) life.
	DefaultAccessTTL = runs.DefaultAccessTTL
	MaxAccessTTL     = runs.MaxAccessTTL

	maxRunBody   = 4 << 20 // manifests
	maxBody      = 64 << 10
	maxManifests = 200
)

// Errors of the API, besides the store's.
var (
	// ErrInvalid marks a request the caller must fix (400). It is the runs
	// service's, so that its checks and the API's own answer alike.
	ErrInvalid = runs.ErrInvalid
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
	mountReviewAPI(r, a)
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
	if p.AtLeast(RoleViewer) && p.Tenant == "" {
		return asked, nil
	}
	if !p.AtLeast(RoleTenant) && !(p.AtLeast(RoleViewer) && p.Tenant != "") {
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

// actingFor is the tenant p acts for when it asks for tenant ("": its own): an admin
// acts for any tenant, a tenant principal only for itself. may and doing name the
// act in the errors ("create runs", "creating runs").
func actingFor(p Principal, tenant, may, doing string) (string, error) {
	switch {
	case p.AtLeast(RoleAdmin) && p.Tenant == "":
		return tenant, nil
	case p.AtLeast(RoleTenant), p.AtLeast(RoleAdmin): // a tenant-scoped admin acts for its tenant only
		if tenant == "" {
			tenant = p.Tenant
		}
		if tenant != p.Tenant {
			return "", fmt.Errorf("%w: tenant %s may %s only for itself", errForbidden, p.Tenant, may)
		}
		return tenant, nil
	}
	return "", fmt.Errorf("%w: %s needs a tenant token or the admin role", errForbidden, doing)
}
