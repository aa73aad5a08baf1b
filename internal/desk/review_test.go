package desk

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluice-egress/sluice/runs"
	"github.com/sluice-egress/sluice/store"
)

// TestModes: a reload that switches a class from shadow to enforce is in the
// audit log; one that changes nothing adds nothing, nor does the first load.
func TestModes(t *testing.T) {
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), store.FileName))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	m := &Modes{Store: st, Logger: slog.New(slog.DiscardHandler)}
	m.Set(map[string]bool{"acme/agent": true})
	m.Set(map[string]bool{"acme/agent": true})
	m.Set(map[string]bool{"acme/agent": false, "acme/new": false})
	es, err := st.ListAudit(context.Background(), store.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range es {
		if e.Action == "policy.mode" {
			got = append(got, e.Tenant+" "+e.Target+" "+e.Detail)
		}
	}
	if len(got) != 1 || got[0] != "acme agent class agent: shadow -> enforce" {
		t.Fatalf("audit %q", got)
	}
	(&Modes{}).Set(map[string]bool{"acme/agent": true}) // no store: nothing written, no panic
}

// TestNotice: only a new pending request is announced, not a decision nor
// one more run joining it.
func TestNotice(t *testing.T) {
	x := runs.AccessRequest{ID: "r1", CreatedAt: time.Now(), Tenant: "acme", Host: "api.example.test", State: store.AccessPending,
		Justification: "needs the docs"}
	n, ok := Notice(x, runs.AccessContext{Class: "agent", Run: "run1", Joined: 1})
	if !ok || n.Kind != "access-request" || n.Tenant != "acme" || n.Class != "agent" || n.Run != "run1" || n.Host != "api.example.test" || n.Snippet != "needs the docs" {
		t.Fatalf("notice %+v %v", n, ok)
	}
	if _, ok := Notice(x, runs.AccessContext{Joined: 2}); ok {
		t.Error("a joining run was announced again")
	}
	x.State = store.AccessApproved
	if _, ok := Notice(x, runs.AccessContext{Joined: 1}); ok {
		t.Error("a decision was announced as a new request")
	}
}
