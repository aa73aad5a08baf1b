package rules

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	presetdata "github.com/sluice-egress/sluice/rules/presets"
)

// Preset is a named, versioned set of entries shipped as data in rules/presets.
type Preset struct {
	// Name is how config and derivation refer to it ("npm", "pypi", "github").
	Name string `yaml:"name" json:"name,omitempty"`
	// Version changes whenever the entries do; provenance shows name@version.
	Version int `yaml:"version" json:"version,omitempty"`
	// Description is one line for `sluice policy presets`.
	Description string `yaml:"description" json:"description,omitempty"`
	// Entries are the preset's entries.
	Entries []PresetEntry `yaml:"entries" json:"entries,omitempty"`
}

// PresetEntry is one entry of a preset: like Entry, but its host may come from a slot the
// operator fills in (presets.hosts in the config), and its paths may be limited to the
// run's repository.
type PresetEntry struct {
	// Host is a host pattern; exactly one of Host and HostFrom.
	Host string `yaml:"host" json:"host,omitempty"`
	// HostFrom names a slot of presets.hosts; the entry stands for each host listed there
	// and for nothing when the slot is unset.
	HostFrom string `yaml:"host_from" json:"host_from,omitempty"`
	// Ports, Methods, Paths and WebSocket are as in Entry, except that Ports defaults to
	// 443 alone.
	Ports     []int    `yaml:"ports" json:"ports,omitempty"`
	Methods   []string `yaml:"methods" json:"methods,omitempty"`
	Paths     []string `yaml:"paths" json:"paths,omitempty"`
	WebSocket bool     `yaml:"websocket" json:"websocket,omitempty"`
	// RepoPaths limits the entry to one repository's paths ("/owner/repo/" and
	// "/owner/repo.git/") when the preset is derived from a run's git remote.
	RepoPaths bool `yaml:"repo_paths" json:"repo_paths,omitempty"`
}

// PresetRef is where an entry came from when a preset expanded into it.
type PresetRef struct {
	Name    string `json:"name"`
	Version int    `json:"version"`
}

// String returns "name@version".
func (p PresetRef) String() string { return fmt.Sprintf("%s@%d", p.Name, p.Version) }

var slotRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,62}$`)

// presets are the shipped presets by name, loaded from rules/presets at init. Tests may
// add their own.
var presets map[string]*Preset

func init() { presets = mustLoadPresets(presetdata.FS) }

// mustLoadPresets parses the shipped presets; a bad file is a build defect, caught by
// the tests, so it panics.
func mustLoadPresets(fsys fs.FS) map[string]*Preset {
	m, err := loadPresets(fsys)
	if err != nil {
		panic(err)
	}
	return m
}

func loadPresets(fsys fs.FS) (map[string]*Preset, error) {
	files, err := fs.Glob(fsys, "*.yaml")
	if err != nil {
		return nil, err
	}
	out := map[string]*Preset{}
	var errs []error
	for _, f := range files {
		b, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, err
		}
		p, err := parsePreset(b, f)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if want := strings.TrimSuffix(path.Base(f), ".yaml"); p.Name != want {
			errs = append(errs, fmt.Errorf("preset %s: name %q differs from the file name", f, p.Name))
			continue
		}
		out[p.Name] = p
	}
	return out, errors.Join(errs...)
}

// parsePreset decodes and validates one preset file strictly.
func parsePreset(data []byte, name string) (*Preset, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var p Preset
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("preset %s: %w", name, err)
	}
	if err := dec.Decode(new(yaml.Node)); err != io.EOF {
		return nil, fmt.Errorf("preset %s: one YAML document only", name)
	}
	var errs []error
	fail := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("preset %s: "+format, append([]any{name}, args...)...))
	}
	if !nameRE.MatchString(p.Name) {
		fail("bad name %q", p.Name)
	}
	if p.Version < 1 {
		fail("version must be 1 or more")
	}
	if len(p.Entries) == 0 {
		fail("no entries")
	}
	for i, pe := range p.Entries {
		switch {
		case (pe.Host == "") == (pe.HostFrom == ""):
			fail("entries[%d]: set host or host_from", i)
			continue
		case pe.HostFrom != "" && !slotRE.MatchString(pe.HostFrom):
			fail("entries[%d]: bad host_from %q", i, pe.HostFrom)
		}
		UpperMethods(pe.Methods)
		if len(pe.Ports) == 0 {
			pe.Ports = []int{443} // presets are HTTPS unless they say otherwise (apt: 80)
		}
		p.Entries[i] = pe
		host := pe.Host
		if host == "" {
			host = "slot.example.test"
		}
		var ps problems
		ps.entry(fmt.Sprintf("entries[%d]", i), &Entry{Host: host, Ports: pe.Ports, Methods: pe.Methods, Paths: pe.Paths, WebSocket: pe.WebSocket}, false)
		for _, p := range ps {
			errs = append(errs, fmt.Errorf("%s: %w", name, p))
		}
		if pe.RepoPaths && len(pe.Paths) > 0 {
			fail("entries[%d]: set paths or repo_paths, not both", i)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &p, nil
}

// Presets returns the shipped presets, sorted by name. They are copies.
func Presets() []Preset {
	var out []Preset
	for _, n := range slices.Sorted(maps.Keys(presets)) {
		p := *presets[n]
		p.Entries = slices.Clone(p.Entries)
		out = append(out, p)
	}
	return out
}

// PresetSlots returns the host slots the shipped presets read (the keys presets.hosts
// accepts), sorted.
func PresetSlots() []string {
	set := map[string]bool{}
	for _, p := range presets {
		for _, pe := range p.Entries {
			if pe.HostFrom != "" {
				set[pe.HostFrom] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// expandPreset returns the entries preset p stands for under pol's PresetHosts, with
// repoPath ("owner/repo", "" for none) limiting the repo_paths entries, and the slots that
// were unset (their entries contribute nothing).
func expandPreset(pol *Policy, p *Preset, repoPath string) (entries []Entry, unset []string) {
	for _, pe := range p.Entries {
		hosts := []string{pe.Host}
		if pe.HostFrom != "" {
			hosts = pol.PresetHosts[pe.HostFrom]
			if len(hosts) == 0 {
				unset = append(unset, pe.HostFrom)
				continue
			}
		}
		for _, h := range hosts {
			en := Entry{
				Host:      h,
				Ports:     slices.Clone(pe.Ports),
				Methods:   slices.Clone(pe.Methods),
				Paths:     slices.Clone(pe.Paths),
				WebSocket: pe.WebSocket,
				Preset:    p.Name,
			}
			if pe.RepoPaths && repoPath != "" {
				en.Paths = []string{"/" + repoPath + "/", "/" + repoPath + ".git/"}
			}
			entries = append(entries, en)
		}
	}
	return entries, unset
}
