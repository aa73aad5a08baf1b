package dashboard

import (
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/sluice-egress/sluice/incident"
	"github.com/sluice-egress/sluice/rules"
)

// An incident's decision trace is the chain that decides its request under
// the policy in force now: the run and its class, each entry considered and
// why it matched or not, and the grant, preset or config line of the one
// that decided. The incident page shows it; GET /api/incidents/{id}/trace
// returns it as JSON.

// traceView is a trace as the page and the API show it.
type traceView struct {
	Tenant   string      `json:"tenant"`
	Class    string      `json:"class"`
	Run      string      `json:"run,omitempty"`
	RunState string      `json:"run_state,omitempty"`
	Stage    string      `json:"stage"`
	Host     string      `json:"host"`
	Port     int         `json:"port"`
	Method   string      `json:"method,omitempty"`
	Path     string      `json:"path,omitempty"`
	Shadow   bool        `json:"shadow,omitempty"`
	Hold     string      `json:"hold,omitempty"`
	Steps    []traceStep `json:"steps"`
	Action   string      `json:"action"`
	Reason   string      `json:"reason,omitempty"`
	Origin   string      `json:"origin,omitempty"`
	Note     string      `json:"note"`
}

type traceStep struct {
	List    string      `json:"list"`
	Entry   rules.Entry `json:"entry"`
	Origin  string      `json:"origin"`
	Matched bool        `json:"matched"`
	Why     string      `json:"why,omitempty"`
}

// traceOf traces the incident's request with the engine in force; nil
// without one or without a tenant.
func traceOf(o Options, in incident.Incident) *traceView {
	e := o.engine()
	if e == nil || in.Tenant == "" || in.Host == "" {
		return nil
	}
	q := rules.Query{Identity: rules.Identity{Tenant: in.Tenant, Class: in.Class, Run: in.Run}, Host: in.Host, Port: in.Port,
		Method: in.Method, Path: in.Path, Stage: rules.StageRequest}
	if in.Method == "" || strings.EqualFold(in.Method, http.MethodConnect) {
		q.Stage, q.Method, q.Path = rules.StageConnect, "", ""
	}
	t := e.Trace(q)
	v := &traceView{Tenant: t.Tenant, Class: t.Class, Run: t.Run, RunState: t.RunState, Stage: t.Stage.String(), Host: t.Host,
		Port: t.Port, Method: t.Method, Path: t.Path, Shadow: t.Review.Shadow, Action: t.Decision.Action.String(),
		Reason: t.Decision.Reason, Steps: []traceStep{},
		Note: "decided now, with the policy, runs and grants in force; the incident was recorded under the policy of its time"}
	if t.Review.Hold > 0 {
		v.Hold = t.Review.Hold.String()
	}
	if t.Decision.Entry != nil {
		v.Origin = t.Decision.Entry.Origin.String()
	}
	for _, s := range t.Steps {
		v.Steps = append(v.Steps, traceStep{List: s.List, Entry: s.Entry, Origin: s.Origin, Matched: s.Matched, Why: s.Why})
	}
	return v
}

func (a *api) incidentTrace(w http.ResponseWriter, r *http.Request) {
	in, err := a.visibleIncident(r.Context(), principal(r), chi.URLParam(r, "id"))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	t := traceOf(a.o, in)
	if t == nil {
		apiError(w, http.StatusNotFound, "no trace: no policy loaded, or the incident names no tenant and host")
		return
	}
	writeJSON(w, http.StatusOK, t)
}
