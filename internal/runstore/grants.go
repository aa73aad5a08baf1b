package runstore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/sluice-egress/sluice/rules"
	"github.com/sluice-egress/sluice/runs"
	"github.com/sluice-egress/sluice/store"
)

// Grants reads the tenant's grants (approved access requests unexpired at now) from
// the store in the data directory dir, for the offline commands: they are part of
// the effective policy. No store there: none. It never creates a store.
func Grants(ctx context.Context, dir, tenant string, now time.Time) ([]rules.Grant, error) {
	path := filepath.Join(dir, store.FileName)
	if _, err := os.Stat(path); err != nil {
		return nil, nil
	}
	st, err := store.Open(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("read grants: %w", err)
	}
	defer st.Close()
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
