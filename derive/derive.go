// Package derive tells which presets a repository's manifests and git remote select, and
// which hosts they name; the hosts stay suggestions and never become allow entries.
package derive

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"maps"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/sluice-egress/sluice/rules"
)

// Limits of the repository walk: a repository is attacker-controlled input.
const (
	maxDeriveFiles    = 20000   // entries visited
	maxDeriveDepth    = 8       // directory levels below the root
	maxManifestBytes  = 2 << 20 // larger manifests are skipped (and reported)
	maxSuggestions    = 200
	originRemote      = "git remote"
	suggestionURLSize = 200
)

// Derivation is what a repository selects: presets (from its manifests and git remote)
// and suggestions (registries and hosts its files name, which never become allow entries
// by themselves). Its JSON is rules.Derived's with "skipped" added.
type Derivation struct {
	// Derived is what the policy takes (rules.PolicyInput.Derived).
	rules.Derived
	// Skipped lists files not read (too large, unreadable) and walk limits reached.
	Skipped []string `json:"skipped,omitempty"`
}

// Policy returns what rules.ResolvePolicy takes; nil for a nil Derivation (no
// repository, no remote).
func (d *Derivation) Policy() *rules.Derived {
	if d == nil {
		return nil
	}
	return &d.Derived
}

// Derive reads a repository's manifests (fsys rooted at the repository; nil for none)
// and its git remote ("" for none), and returns the presets they select and the hosts
// they name. The walk skips dependency and VCS directories and is bounded in files,
// depth and file size. A remote on an unknown git host is a suggestion, not an error.
func Derive(fsys fs.FS, remote string) (*Derivation, error) {
	d := &deriver{presets: map[string][]string{}}
	if fsys != nil {
		if err := d.walk(fsys); err != nil {
			return nil, err
		}
	}
	if remote != "" {
		if repo, err := ParseRemote(remote); err == nil {
			d.Repo = &repo
			d.selectPreset(repo.Preset, originRemote)
		} else if host, _, herr := splitRemote(remote); herr == nil {
			d.suggestions = append(d.suggestions, rules.Suggestion{Host: host, Port: 443, URL: "https://" + host + "/", Source: originRemote, Why: "git remote on a host without a preset"})
		} else {
			return nil, err
		}
	}
	out := &d.Derivation
	for _, n := range slices.Sorted(maps.Keys(d.presets)) {
		from := d.presets[n]
		slices.Sort(from)
		out.Presets = append(out.Presets, rules.DerivedPreset{Name: n, From: slices.Compact(from)})
	}
	slices.SortFunc(d.suggestions, func(a, b rules.Suggestion) int {
		return cmpAll(strings.Compare(a.Host, b.Host), a.Port-b.Port, strings.Compare(a.Source, b.Source), strings.Compare(a.Why, b.Why))
	})
	out.Suggestions = slices.CompactFunc(d.suggestions, func(a, b rules.Suggestion) bool { return a == b })
	if len(out.Suggestions) > maxSuggestions {
		out.Suggestions = out.Suggestions[:maxSuggestions]
		out.Skipped = append(out.Skipped, fmt.Sprintf("suggestions beyond %d", maxSuggestions))
	}
	return out, nil
}

func cmpAll(cs ...int) int {
	for _, c := range cs {
		if c != 0 {
			return c
		}
	}
	return 0
}

// deriver collects one Derive call's results; parsers add to it.
type deriver struct {
	Derivation
	presets     map[string][]string
	suggestions []rules.Suggestion
}

// parser reads one manifest: it selects presets and suggests the hosts it names.
type parser func(d *deriver, file string, data []byte)

// manifest is one row of the table of parsers: which files, read how.
type manifest struct {
	// match reports whether the file at p (slash-separated, relative to the repository;
	// base is path.Base(p), lower the base in lower case) is this manifest.
	match func(p, base, lower string) bool
	parse parser
}

// manifests is the table of parsers, one block per ecosystem (in its file); the first
// row that matches a file reads it.
var manifests = slices.Concat(
	npmManifests,
	pythonManifests,
	goManifests,
	rustManifests,
	rubyManifests,
	javaManifests,
	phpManifests,
	dotnetManifests,
	dockerManifests,
	makeManifests,
)

// named matches files whose base name is one of names.
func named(names ...string) func(p, base, lower string) bool {
	return func(_, base, _ string) bool { return slices.Contains(names, base) }
}

// manifestParser returns the parser for a file, nil for files derivation ignores.
func manifestParser(p string) parser {
	base := path.Base(p)
	lower := strings.ToLower(base)
	for _, m := range manifests {
		if m.match(p, base, lower) {
			return m.parse
		}
	}
	return nil
}

// IsManifest reports whether Derive reads the file at p (a slash-separated path
// relative to the repository): for clients that send a repository's manifests to the
// API instead of the whole tree.
func IsManifest(p string) bool { return manifestParser(p) != nil }

// SkipDir reports whether Derive skips a directory of this name (dependencies, build
// output, VCS data).
func SkipDir(name string) bool { return skipDirs[name] }

// skipDirs are never walked: dependencies, build output and VCS data hold other
// projects' manifests.
var skipDirs = map[string]bool{
	".git": true, ".hg": true, ".svn": true, "node_modules": true, "bower_components": true,
	"vendor": true, ".venv": true, "venv": true, ".tox": true, "__pycache__": true,
	"target": true, ".gradle": true, ".terraform": true,
}

func (d *deriver) walk(fsys fs.FS) error {
	visited := 0
	err := fs.WalkDir(fsys, ".", func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			if p == "." {
				return err
			}
			d.Skipped = append(d.Skipped, p+": unreadable")
			return nil
		}
		visited++
		if visited > maxDeriveFiles {
			d.Skipped = append(d.Skipped, fmt.Sprintf("files beyond the first %d", maxDeriveFiles))
			return fs.SkipAll
		}
		if de.IsDir() {
			if p != "." && (skipDirs[de.Name()] || strings.Count(p, "/") >= maxDeriveDepth) {
				return fs.SkipDir
			}
			return nil
		}
		if !de.Type().IsRegular() {
			return nil // symlinks may point out of the repository
		}
		parse := manifestParser(p)
		if parse == nil {
			return nil
		}
		info, err := de.Info()
		if err != nil || info.Size() > maxManifestBytes {
			d.Skipped = append(d.Skipped, p+": larger than 2 MiB or unreadable")
			return nil
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			d.Skipped = append(d.Skipped, p+": unreadable")
			return nil
		}
		parse(d, p, data)
		return nil
	})
	if err != nil {
		return fmt.Errorf("derive: %w", err)
	}
	return nil
}

func (d *deriver) selectPreset(name, from string) {
	d.presets[name] = append(d.presets[name], from)
}

// suggest records the URL raw named in file at line (1-based), unless it is no http(s)
// URL with a host.
func (d *deriver) suggest(file string, line int, raw, why string) {
	raw = strings.Trim(strings.TrimSpace(raw), `"',;()[]`)
	// "git+https://", "sparse+https://", "registry+https://": the transport after '+'.
	if i := strings.Index(raw, "://"); i > 0 {
		if j := strings.LastIndex(raw[:i], "+"); j >= 0 {
			raw = raw[j+1:]
		}
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return
	}
	host, err := rules.NormalizeHost(u.Hostname())
	if err != nil {
		return
	}
	port := 443
	if u.Scheme == "http" {
		port = 80
	}
	if ps := u.Port(); ps != "" {
		if n, err := strconv.Atoi(ps); err == nil && n > 0 && n < 65536 {
			port = n
		} else {
			return
		}
	}
	clean := url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}
	s := clean.String()
	if len(s) > suggestionURLSize {
		s = s[:suggestionURLSize] + "…"
	}
	d.suggestions = append(d.suggestions, rules.Suggestion{Host: host, Port: port, URL: s, Source: fmt.Sprintf("%s:%d", file, line), Why: why})
}

// suggestHost records a host named without a URL (pip's --trusted-host).
func (d *deriver) suggestHost(file string, line int, host, why string) {
	h, p, ok := strings.Cut(host, ":")
	if ok {
		d.suggest(file, line, "https://"+h+":"+p+"/", why)
		return
	}
	d.suggest(file, line, "https://"+h+"/", why)
}

// lineAt returns the 1-based line of byte offset off in data.
func lineAt(data []byte, off int) int { return bytes.Count(data[:off], []byte("\n")) + 1 }

// forLines calls fn with each line of data and its 1-based number.
func forLines(data []byte, fn func(n int, line string)) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), maxManifestBytes)
	n := 0
	for sc.Scan() {
		n++
		fn(n, sc.Text())
	}
}
