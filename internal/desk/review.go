package desk

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/sluice-egress/sluice/incident"
	"github.com/sluice-egress/sluice/rules"
	"github.com/sluice-egress/sluice/runs"
	"github.com/sluice-egress/sluice/store"
)

// Notice is the incident-shaped notice the webhooks get for a new access
// request (not stored: the request itself is); false for any other event
// (a decision, or one more run joining a pending request).
func Notice(x runs.AccessRequest, c runs.AccessContext) (incident.Incident, bool) {
	if x.State != store.AccessPending || c.Joined > 1 {
		return incident.Incident{}, false
	}
	return incident.Incident{ID: x.ID, Time: x.CreatedAt, Tenant: x.Tenant, Class: c.Class, Run: c.Run,
		Kind: "access-request", Reason: "access-requested", Action: "review", Host: x.Host,
		Snippet: incident.Clip(x.Justification, 200)}, true
}

// Auditor is the part of the store the mode audit writes to.
type Auditor interface {
	AppendAudit(ctx context.Context, e store.AuditEntry) (int64, error)
}

// Modes records in the audit log every class whose mode a reload changed
// (shadow to enforce above all: from then on refusals refuse).
type Modes struct {
	// Store takes the audit entries; nil: none are written.
	Store Auditor
	// Logger logs each change and a failed write; nil: slog.Default().
	Logger *slog.Logger

	mu   sync.Mutex
	last map[string]bool // shadow by "tenant/class", as last Set
}

// Set takes the modes now in force (config.ShadowClasses: shadow by
// "tenant/class"). The first call only remembers them.
func (m *Modes) Set(now map[string]bool) {
	m.mu.Lock()
	before := m.last
	m.last = now
	m.mu.Unlock()
	if before == nil || m.Store == nil {
		return
	}
	log := m.Logger
	if log == nil {
		log = slog.Default()
	}
	for _, k := range slices.Sorted(maps.Keys(now)) {
		was, ok := before[k]
		if !ok || was == now[k] {
			continue
		}
		tenant, class, _ := strings.Cut(k, "/")
		detail := "class " + class + ": " + modeName(was) + " -> " + modeName(now[k])
		if _, err := m.Store.AppendAudit(context.Background(), store.AuditEntry{Actor: "sluice (config reload)",
			Action: "policy.mode", Tenant: tenant, Target: class, Detail: detail}); err != nil {
			log.Error("audit entry not written", "action", "policy.mode", "tenant", tenant, "class", class, "err", err)
		}
		log.Info("class mode changed", "tenant", tenant, "class", class, "detail", detail)
	}
}

func modeName(shadow bool) string {
	if shadow {
		return rules.ModeShadow
	}
	return rules.ModeEnforce
}
