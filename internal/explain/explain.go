// Package explain renders for operators what the offline commands show: a
// tenant's effective policy with where each entry comes from, the shipped
// presets, and the scanner's findings in files.
package explain

import (
	"fmt"
	"io"
	"strings"

	"github.com/sluice-egress/sluice/derive"
	"github.com/sluice-egress/sluice/rules"
)

// Policy writes p, and what d derived from a repository (nil: none), as text.
func Policy(w io.Writer, p *rules.EffectivePolicy, d *derive.Derivation) {
	fmt.Fprintf(w, "tenant %s, class %s\n", p.Tenant, p.Class)
	if p.TenantToken {
		fmt.Fprintf(w, "reached with: the tenant token (as %s/%s) and run tokens\n", p.Tenant, p.Class)
	} else {
		fmt.Fprintln(w, "reached with: run tokens only (the class is not in the tenant's token_classes)")
	}
	for _, role := range []struct {
		name    string
		entries []rules.Entry
	}{{"allow (inspected, checked per request)", p.Allow}, {"passthrough (blind tunnel, host and port only)", p.Passthrough}} {
		fmt.Fprintf(w, "\n%s:\n", role.name)
		if len(role.entries) == 0 {
			fmt.Fprintln(w, "  (none)")
		}
		for _, en := range role.entries {
			fmt.Fprintf(w, "  %-40s %s  [%s]\n", en.Host, en.Limits(), en.Origin)
		}
	}
	if len(p.Presets) > 0 {
		fmt.Fprintln(w, "\npresets:")
		for _, u := range p.Presets {
			note := ""
			if u.Note != "" {
				note = ": " + u.Note
			}
			fmt.Fprintf(w, "  %-14s %s, %d entries%s\n", u.Preset, u.Origin.Where(), u.Entries, note)
		}
	}
	if d != nil && d.Repo != nil {
		fmt.Fprintf(w, "\nrepository: %s/%s (preset %s)\n", d.Repo.Host, d.Repo.Path, d.Repo.Preset)
	}
	if len(p.Suggestions) > 0 {
		fmt.Fprintln(w, "\nsuggestions (named by the repository, not allowed; request access to add them):")
		for _, s := range p.Suggestions {
			fmt.Fprintf(w, "  %s:%d  %s  %s (%s)\n", s.Host, s.Port, s.URL, s.Why, s.Source)
		}
	}
	if d != nil && len(d.Skipped) > 0 {
		fmt.Fprintln(w, "\nnot read:")
		for _, s := range d.Skipped {
			fmt.Fprintf(w, "  %s\n", s)
		}
	}
}

// Presets writes the presets ps and the host slots they read.
func Presets(w io.Writer, ps []rules.Preset) {
	for _, p := range ps {
		fmt.Fprintf(w, "%s@%d  %s\n", p.Name, p.Version, p.Description)
		for _, pe := range p.Entries {
			host := pe.Host
			if pe.HostFrom != "" {
				host = "hosts from presets.hosts." + pe.HostFrom
			}
			limits := rules.Entry{Ports: pe.Ports, Methods: pe.Methods, Paths: pe.Paths, WebSocket: pe.WebSocket}.Limits()
			if pe.RepoPaths {
				limits += "  paths: the run's repository"
			}
			fmt.Fprintf(w, "    %-40s %s\n", host, limits)
		}
	}
	fmt.Fprintf(w, "\nhost slots (set under presets.hosts in the config): %s\n", strings.Join(rules.PresetSlots(), ", "))
}
