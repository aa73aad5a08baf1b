package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// PrefixProposal starts a proposal's id.
const PrefixProposal = "prp_"

// Kinds of a proposal.
const (
	// ProposalRuleAllowlist suggests allowlisting a detection rule's finding
	// (for a host and path) in the rule pack.
	ProposalRuleAllowlist = "rule-allowlist"
	// ProposalPolicyEntry suggests adding the host to a tenant's policy.
	ProposalPolicyEntry = "policy-entry"
)

// States of a proposal.
const (
	ProposalOpen   = "open"
	ProposalClosed = "closed"
)

// Proposal is a reviewer's suggestion to the maintainers, made while
// marking an incident a false positive.
type Proposal struct {
	// ID is set by CreateProposal.
	ID string
	// Time zero: now.
	Time       time.Time
	IncidentID string
	Tenant     string
	// Kind is ProposalRuleAllowlist or ProposalPolicyEntry.
	Kind   string
	Rule   string
	Host   string
	Path   string
	Reason string
	// Actor is who proposed it (required).
	Actor string
	// State is ProposalOpen or ProposalClosed.
	State    string
	ClosedBy string
	ClosedAt time.Time
}

const proposalColumns = `id, at, incident_id, tenant, kind, rule, host, path, reason, actor, state, closed_by, closed_at`

func scanProposal(sc interface{ Scan(...any) error }) (Proposal, error) {
	var p Proposal
	var at, closed int64
	err := sc.Scan(&p.ID, &at, &p.IncidentID, &p.Tenant, &p.Kind, &p.Rule, &p.Host, &p.Path, &p.Reason,
		&p.Actor, &p.State, &p.ClosedBy, &closed)
	if err != nil {
		return Proposal{}, err
	}
	p.Time = fromNanos(at)
	if closed != 0 {
		p.ClosedAt = fromNanos(closed)
	}
	return p, nil
}

// CreateProposal stores an open proposal and appends it to the audit log,
// in one transaction.
func (s *Store) CreateProposal(ctx context.Context, p Proposal) (Proposal, error) {
	if p.Actor == "" {
		return Proposal{}, fmt.Errorf("%w: a proposal needs an actor", ErrInvalid)
	}
	if p.Kind != ProposalRuleAllowlist && p.Kind != ProposalPolicyEntry {
		return Proposal{}, fmt.Errorf("%w: proposal kind %q (want %s or %s)", ErrInvalid, p.Kind,
			ProposalRuleAllowlist, ProposalPolicyEntry)
	}
	if p.Time.IsZero() {
		p.Time = s.now()
	}
	p.ID = NewID(PrefixProposal, p.Time)
	p.State = ProposalOpen
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return Proposal{}, fmt.Errorf("store: create proposal: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `INSERT INTO proposals (`+proposalColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '', 0)`, p.ID, nanos(p.Time), p.IncidentID, p.Tenant, p.Kind,
		p.Rule, p.Host, p.Path, p.Reason, p.Actor, p.State); err != nil {
		return Proposal{}, fmt.Errorf("store: create proposal: %w", err)
	}
	if _, err := appendAudit(ctx, tx, AuditEntry{Time: p.Time, Actor: p.Actor, Action: "proposal." + p.Kind,
		Tenant: p.Tenant, Target: p.ID, Detail: p.IncidentID}); err != nil {
		return Proposal{}, err
	}
	if err := tx.Commit(); err != nil {
		return Proposal{}, fmt.Errorf("store: create proposal: %w", err)
	}
	return p, nil
}

// ProposalFilter selects proposals. Empty fields do not filter.
type ProposalFilter struct {
	State, Tenant, Rule string
	// Limit: zero is 100; at most 1000.
	Limit int
}

// ListProposals returns proposals matching f, newest first.
func (s *Store) ListProposals(ctx context.Context, f ProposalFilter) ([]Proposal, error) {
	q := "SELECT " + proposalColumns + " FROM proposals WHERE 1=1"
	var args []any
	for _, c := range []struct{ col, v string }{{"state", f.State}, {"tenant", f.Tenant}, {"rule", f.Rule}} {
		if c.v != "" {
			q += " AND " + c.col + " = ?"
			args = append(args, c.v)
		}
	}
	q += " ORDER BY at DESC, id DESC LIMIT ?"
	return queryAll(ctx, s.db, "list proposals", scanProposal, q, append(args, clampLimit(f.Limit, 100))...)
}

// CloseProposal marks an open proposal closed (done or dismissed: the
// note says which) and records it in the audit log. A closed proposal is
// ErrConflict, an unknown one ErrNotFound.
func (s *Store) CloseProposal(ctx context.Context, id, actor, note string) (Proposal, error) {
	if actor == "" {
		return Proposal{}, fmt.Errorf("%w: closing a proposal needs an actor", ErrInvalid)
	}
	now := s.now()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return Proposal{}, fmt.Errorf("store: close proposal: %w", err)
	}
	defer tx.Rollback()
	p, err := scanProposal(tx.QueryRowContext(ctx, "SELECT "+proposalColumns+" FROM proposals WHERE id = ?"+s.forUpdate(), id))
	if errors.Is(err, sql.ErrNoRows) {
		return Proposal{}, fmt.Errorf("%w: proposal %s", ErrNotFound, id)
	}
	if err != nil {
		return Proposal{}, fmt.Errorf("store: close proposal: %w", err)
	}
	if p.State != ProposalOpen {
		return p, fmt.Errorf("%w: proposal %s is %s", ErrConflict, id, p.State)
	}
	p.State, p.ClosedBy, p.ClosedAt = ProposalClosed, actor, now
	if _, err := tx.ExecContext(ctx, "UPDATE proposals SET state = ?, closed_by = ?, closed_at = ? WHERE id = ?",
		p.State, actor, nanos(now), id); err != nil {
		return Proposal{}, fmt.Errorf("store: close proposal: %w", err)
	}
	if _, err := appendAudit(ctx, tx, AuditEntry{Time: now, Actor: actor, Action: "proposal.closed",
		Tenant: p.Tenant, Target: id, Detail: note}); err != nil {
		return Proposal{}, err
	}
	if err := tx.Commit(); err != nil {
		return Proposal{}, fmt.Errorf("store: close proposal: %w", err)
	}
	return p, nil
}
