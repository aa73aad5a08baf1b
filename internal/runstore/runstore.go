// Package runstore keeps the runs service's records in the store: it adapts
// *store.Store to runs.Store, whose record types mirror the store's field for
// field (runs may not import store, nor store rules).
package runstore

import (
	"context"
	"time"

	"github.com/sluice-egress/sluice/runs"
	"github.com/sluice-egress/sluice/store"
)

// Store is a *store.Store seen as a runs.Store.
type Store struct{ S *store.Store }

var _ runs.Store = Store{}

// New returns st as a runs.Store.
func New(st *store.Store) Store { return Store{S: st} }

// NewRunID returns a new run id (store.PrefixRun).
func (a Store) NewRunID(now time.Time) string { return store.NewID(store.PrefixRun, now) }

func (a Store) CreateRun(ctx context.Context, r runs.Run) (runs.Run, error) {
	out, err := a.S.CreateRun(ctx, store.Run(r))
	return runs.Run(out), err
}

func (a Store) EndRun(ctx context.Context, id string, at time.Time) (runs.Run, error) {
	out, err := a.S.EndRun(ctx, id, at)
	return runs.Run(out), err
}

// ActiveRuns lists up to 1000 runs that have neither ended nor expired.
func (a Store) ActiveRuns(ctx context.Context) ([]runs.Run, error) {
	rs, err := a.S.ListRuns(ctx, store.RunFilter{Active: true, Limit: 1000})
	return convert(rs, func(r store.Run) runs.Run { return runs.Run(r) }), err
}

func (a Store) GetRun(ctx context.Context, id string) (runs.Run, error) {
	out, err := a.S.GetRun(ctx, id)
	return runs.Run(out), err
}

func (a Store) RunByTokenHash(ctx context.Context, hash string) (runs.Run, error) {
	out, err := a.S.RunByTokenHash(ctx, hash)
	return runs.Run(out), err
}

func (a Store) AppendAudit(ctx context.Context, e runs.AuditEntry) (int64, error) {
	return a.S.AppendAudit(ctx, store.AuditEntry(e))
}

func (a Store) ExpireAccessRequests(ctx context.Context, now time.Time) (int64, error) {
	return a.S.ExpireAccessRequests(ctx, now)
}

func (a Store) ActiveGrants(ctx context.Context, now time.Time) ([]runs.AccessRequest, error) {
	xs, err := a.S.ActiveGrants(ctx, now)
	return convert(xs, func(x store.AccessRequest) runs.AccessRequest { return runs.AccessRequest(x) }), err
}

func (a Store) CreateAccessRequest(ctx context.Context, x runs.AccessRequest) (runs.AccessRequest, error) {
	out, err := a.S.CreateAccessRequest(ctx, store.AccessRequest(x))
	return runs.AccessRequest(out), err
}

func (a Store) DecideAccessRequest(ctx context.Context, id string, d runs.AccessDecision) (runs.AccessRequest, error) {
	x, err := a.S.DecideAccessRequest(ctx, id, store.AccessDecision(d))
	return runs.AccessRequest(x), err
}

func convert[T, U any](xs []T, f func(T) U) []U {
	if xs == nil {
		return nil
	}
	out := make([]U, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	return out
}
