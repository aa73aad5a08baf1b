package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/sluice-egress/sluice/config"
	"github.com/sluice-egress/sluice/derive"
	"github.com/sluice-egress/sluice/internal/database"
	"github.com/sluice-egress/sluice/rules"
)

// runInput is what a stored run adds to its class's policy: its derived
// presets and its own entries, as the runs service registers them, so
// that `policy explain|check --run R` answers for that run.
func runInput(cfg *config.Config, id, tenant string) (rules.PolicyInput, error) {
	ctx := context.Background()
	st, err := database.Existing(ctx, cfg)
	if err != nil {
		return rules.PolicyInput{}, fmt.Errorf("--run: %w", err)
	}
	if st == nil {
		return rules.PolicyInput{}, fmt.Errorf("--run %s: no store in %s: runs live there", id, cfg.DataPath())
	}
	defer st.Close()
	run, err := st.GetRun(ctx, id)
	if err != nil {
		return rules.PolicyInput{}, fmt.Errorf("--run: %w", err)
	}
	if tenant != "" && tenant != run.Tenant {
		return rules.PolicyInput{}, fmt.Errorf("--run %s belongs to tenant %s, not %s", id, run.Tenant, tenant)
	}
	in := rules.PolicyInput{Tenant: run.Tenant, Class: run.Class, Run: run.ID}
	var rec struct {
		Derivation *derive.Derivation `json:"derivation"`
	}
	if len(run.Manifests) > 0 && run.Manifests[0] == '{' {
		if err := json.Unmarshal(run.Manifests, &rec); err != nil {
			return in, fmt.Errorf("--run %s: manifests: %w", id, err)
		}
		in.Derived = rec.Derivation.Policy()
	}
	if err := json.Unmarshal(run.Extra, &in.Extras); err != nil {
		return in, fmt.Errorf("--run %s: entries: %w", id, err)
	}
	return in, nil
}
