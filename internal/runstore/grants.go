package runstore

import (
	"context"
	"fmt"
	"time"

	"github.com/sluice-egress/sluice/rules"
	"github.com/sluice-egress/sluice/runs"
	"github.com/sluice-egress/sluice/store"
)

// Grants reads the tenant's grants (approved access requests unexpired at now)
// from st, for the offline commands: they are part of the effective policy. A nil
// st (no store yet): none.
func Grants(ctx context.Context, st *store.Store, tenant string, now time.Time) ([]rules.Grant, error) {
	if st == nil {
		return nil, nil
	}
	active, err := st.ActiveGrants(ctx, now)
	if err != nil {
		return nil, fmt.Errorf("read grants: %w", err)
	}
	var out []rules.Grant
	for _, x := range active {
		if x.Tenant == tenant {
			out = append(out, runs.GrantOf(runs.AccessRequest(x)))
		}
	}
	return out, nil
}
