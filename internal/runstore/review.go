package runstore

import (
	"context"

	"github.com/sluice-egress/sluice/runs"
	"github.com/sluice-egress/sluice/store"
)

var _ runs.ReviewStore = Store{}

func (a Store) GetAccessRequest(ctx context.Context, id string) (runs.AccessRequest, error) {
	out, err := a.S.GetAccessRequest(ctx, id)
	return runs.AccessRequest(out), err
}

func (a Store) SetAccessContext(ctx context.Context, c runs.AccessContext) error {
	return a.S.SetAccessContext(ctx, store.AccessContext(c))
}

func (a Store) GetAccessContext(ctx context.Context, id string) (runs.AccessContext, error) {
	c, err := a.S.GetAccessContext(ctx, id)
	return runs.AccessContext(c), err
}

func (a Store) AccessContexts(ctx context.Context, ids []string) (map[string]runs.AccessContext, error) {
	cs, err := a.S.AccessContexts(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make(map[string]runs.AccessContext, len(cs))
	for id, c := range cs {
		out[id] = runs.AccessContext(c)
	}
	return out, nil
}

func (a Store) JoinAccessRequest(ctx context.Context, id string, held bool) error {
	return a.S.JoinAccessRequest(ctx, id, held)
}

func (a Store) FindPendingAccess(ctx context.Context, tenant, run string, want runs.AccessRequest) (runs.AccessRequest, bool, error) {
	x, ok, err := a.S.FindPendingAccess(ctx, tenant, run, store.AccessRequest(want))
	return runs.AccessRequest(x), ok, err
}

func (a Store) CountPendingAccess(ctx context.Context, tenant string) (int, error) {
	return a.S.CountPendingAccess(ctx, tenant)
}

func (a Store) ScopeAccessRequest(ctx context.Context, id string, sc runs.AccessScope) error {
	return a.S.ScopeAccessRequest(ctx, id, store.AccessScope(sc))
}
