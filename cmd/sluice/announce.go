package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"github.com/sluice-egress/sluice/config"
	"github.com/sluice-egress/sluice/rules"
)

// announceDashboard says where the dashboard is and, when no user can log
// in to it, how to add one: without a user its login page refuses everyone.
func announceDashboard(w io.Writer, cfg *config.Config, admin string) {
	fmt.Fprintf(w, "dashboard on http://%s/\n", admin)
	if len(cfg.Dashboard.Users) > 0 {
		return
	}
	fmt.Fprintln(w, "  no dashboard user yet: nobody can log in. Add one:")
	fmt.Fprintln(w, "    sluice user hash > admin.hash   (reads the password on stdin)")
	fmt.Fprintln(w, "    and in the config: dashboard: {users: [{name: admin, role: admin, password_hash_file: admin.hash}]}")
}

// configPresetWarnings lists the presets of the config's classes that
// contribute nothing (a presets.hosts slot left unset), one line each, for
// serve to log at start: the class's agents would be refused hosts the
// operator meant to allow.
func configPresetWarnings(cfg *config.Config) []string {
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
