package dashboard

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/sluice-egress/sluice/store"
)

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
	tenant, err := scopeTenant(principal(r), q.Get("tenant")) // a tenant-scoped user: its own entries
	if err != nil {
		a.fail(w, r, err)
		return
	}
	f := store.AuditFilter{Tenant: tenant}
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
