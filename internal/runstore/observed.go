package runstore

import (
	"context"
	"time"

	"github.com/sluice-egress/sluice/runs"
	"github.com/sluice-egress/sluice/store"
)

// policyRefusals are the incident reasons a grant could have lifted: what
// policy propose lists as refused.
var policyRefusals = map[string]bool{
	"host-not-allowed": true, "port-not-allowed": true, "method-not-allowed": true,
	"path-not-allowed": true, "websocket-not-allowed": true,
}

// maxRefusalIncidents bounds the incidents read for one draft.
const maxRefusalIncidents = 20000

// Observed reads what a tenant's runs did since since (zero: all that is
// kept), for runs.Propose: the observation log (allowed and would-refuse
// requests) and the policy's refusals from the incidents. A would-refuse
// incident is skipped: its request went through and is in the log.
func Observed(ctx context.Context, st *store.Store, tenant, class string, since time.Time) ([]runs.Observed, error) {
	obs, err := st.ListObservations(ctx, store.ObservationFilter{Tenant: tenant, Class: class, Since: since, Limit: 100000})
	if err != nil {
		return nil, err
	}
	out := make([]runs.Observed, 0, len(obs))
	for _, o := range obs {
		v := runs.VerdictAllowed
		if o.Verdict == store.ObservedShadow {
			v = runs.VerdictWouldRefuse
		}
		out = append(out, runs.Observed{Class: o.Class, Run: o.Run, Host: o.Host, Port: o.Port, Method: o.Method,
			Path: o.Path, Verdict: v, Count: o.Count, First: o.FirstSeen, Last: o.LastSeen})
	}
	f := store.IncidentFilter{Tenant: tenant, Class: class, Kind: "deny", Since: since, Limit: 1000}
	read := 0
	for read < maxRefusalIncidents {
		page, err := st.ListIncidents(ctx, f)
		if err != nil {
			return nil, err
		}
		for _, in := range page.Incidents {
			read++
			if !policyRefusals[in.Reason] || in.Action == "would-block" {
				continue
			}
			path := in.Path
			if in.Method == "CONNECT" {
				path = ""
			}
			out = append(out, runs.Observed{Class: in.Class, Run: in.Run, Host: in.Host, Port: in.Port, Method: in.Method,
				Path: path, Verdict: runs.VerdictRefused, Count: 1, First: in.Time, Last: in.Time})
		}
		if page.Next == "" {
			break
		}
		f.After = page.Next
	}
	return out, nil
}
