package database

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/sluice-egress/sluice/config"
	"github.com/sluice-egress/sluice/derive"
	"github.com/sluice-egress/sluice/rules"
)

// RunInput is what the stored run id adds to its class's policy: its derived
// presets and its own entries, as the runs service registers them, so that a
// policy question is answered for that run. A tenant other than "" must be
// the run's. It never creates the store. Errors begin with the run's id.
func RunInput(ctx context.Context, cfg *config.Config, id, tenant string) (rules.PolicyInput, error) {
	st, err := Existing(ctx, cfg)
	if err != nil {
		return rules.PolicyInput{}, fmt.Errorf("%s: %w", id, err)
	}
	if st == nil {
		return rules.PolicyInput{}, fmt.Errorf("%s: no store in %s: runs live there", id, cfg.DataPath())
	}
	defer st.Close()
	run, err := st.GetRun(ctx, id)
	if err != nil {
		return rules.PolicyInput{}, fmt.Errorf("%s: %w", id, err)
	}
	if tenant != "" && tenant != run.Tenant {
		return rules.PolicyInput{}, fmt.Errorf("%s belongs to tenant %s, not %s", id, run.Tenant, tenant)
	}
	in := rules.PolicyInput{Tenant: run.Tenant, Class: run.Class, Run: run.ID}
	var rec struct {
		Derivation *derive.Derivation `json:"derivation"`
	}
	if len(run.Manifests) > 0 && run.Manifests[0] == '{' {
		if err := json.Unmarshal(run.Manifests, &rec); err != nil {
			return in, fmt.Errorf("%s: manifests: %w", id, err)
		}
		in.Derived = rec.Derivation.Policy()
	}
	if err := json.Unmarshal(run.Extra, &in.Extras); err != nil {
		return in, fmt.Errorf("%s: entries: %w", id, err)
	}
	return in, nil
}
