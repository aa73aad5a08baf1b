package store

import (
	"context"
	"errors"
	"testing"
)

func TestProposals(t *testing.T) {
	eachDriver(t, func(t *testing.T, db testDB) {
		ctx := context.Background()
		s := db.Open(t)
		if _, err := s.CreateProposal(ctx, Proposal{Kind: ProposalPolicyEntry}); !errors.Is(err, ErrInvalid) {
			t.Fatalf("no actor: %v", err)
		}
		if _, err := s.CreateProposal(ctx, Proposal{Kind: "rm -rf", Actor: "rex"}); !errors.Is(err, ErrInvalid) {
			t.Fatalf("bad kind: %v", err)
		}
		a, err := s.CreateProposal(ctx, Proposal{Kind: ProposalRuleAllowlist, Actor: "rex", Tenant: "acme", IncidentID: "inc_1",
			Rule: "github-pat", Host: "api.example.test", Path: "/x", Reason: "fixture"})
		if err != nil {
			t.Fatal(err)
		}
		b, err := s.CreateProposal(ctx, Proposal{Kind: ProposalPolicyEntry, Actor: "ada", Tenant: "globex", Host: "h.example.test"})
		if err != nil {
			t.Fatal(err)
		}
		if a.ID == b.ID || a.State != ProposalOpen || a.ID[:4] != PrefixProposal {
			t.Fatalf("%+v %+v", a, b)
		}
		open, err := s.ListProposals(ctx, ProposalFilter{State: ProposalOpen})
		if err != nil || len(open) != 2 || open[0].ID != b.ID || open[1].Rule != "github-pat" {
			t.Fatalf("%+v %v", open, err)
		}
		if got, _ := s.ListProposals(ctx, ProposalFilter{Tenant: "acme"}); len(got) != 1 || got[0].ID != a.ID {
			t.Fatalf("tenant filter: %+v", got)
		}
		c, err := s.CloseProposal(ctx, a.ID, "ada", "added to the pack")
		if err != nil || c.State != ProposalClosed || c.ClosedBy != "ada" || c.ClosedAt.IsZero() {
			t.Fatalf("%+v %v", c, err)
		}
		if _, err := s.CloseProposal(ctx, a.ID, "ada", ""); !errors.Is(err, ErrConflict) {
			t.Fatalf("closed twice: %v", err)
		}
		if _, err := s.CloseProposal(ctx, "prp_nope", "ada", ""); !errors.Is(err, ErrNotFound) {
			t.Fatalf("unknown: %v", err)
		}
		if _, err := s.CloseProposal(ctx, b.ID, "", ""); !errors.Is(err, ErrInvalid) {
			t.Fatalf("no actor: %v", err)
		}
		if open, _ := s.ListProposals(ctx, ProposalFilter{State: ProposalOpen}); len(open) != 1 {
			t.Fatalf("open after close: %+v", open)
		}
		audit, err := s.ListAudit(ctx, AuditFilter{})
		if err != nil {
			t.Fatal(err)
		}
		var actions []string
		for _, e := range audit {
			actions = append(actions, e.Action)
		}
		want := []string{"proposal.closed", "proposal.policy-entry", "proposal.rule-allowlist"}
		if len(actions) != 3 || actions[0] != want[0] || actions[1] != want[1] || actions[2] != want[2] {
			t.Fatalf("audit %v, want %v", actions, want)
		}
	})
}
