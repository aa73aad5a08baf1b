package config

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/sluice-egress/sluice/rules"
)

// PresetWarnings lists the presets of the config's classes that
// contribute nothing (a presets.hosts slot left unset), one line each, for
// serve to log at start: the class's agents would be refused hosts the
// operator meant to allow.
func (cfg *Config) PresetWarnings() []string {
	var out []string
	pol := cfg.Policy()
	for _, t := range slices.Sorted(maps.Keys(cfg.Tenants)) {
		if cfg.Tenants[t] == nil {
			continue
		}
		for _, c := range slices.Sorted(maps.Keys(cfg.Tenants[t].Classes)) {
			p, err := rules.ResolvePolicy(rules.PolicyInput{Policy: pol, Tenant: t, Class: c, Now: time.Now()})
			if err != nil {
				continue // Compile reports it
			}
			for _, u := range p.Presets {
				if u.Entries == 0 && u.Note != "" {
					out = append(out, fmt.Sprintf("tenant %s class %s: preset %s contributes nothing: %s", t, c, u.Preset, u.Note))
				}
			}
		}
	}
	return out
}
