package rules

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
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
// by themselves).
type Derivation struct {
	// Presets selected, sorted by name, each with the files that selected it.
	Presets []DerivedPreset `json:"presets"`
	// Repo is the git remote's repository on a known git host; nil when none.
	Repo *GitRepo `json:"repo,omitempty"`
	// Suggestions are hosts the repository names, sorted by host, port and source.
	Suggestions []Suggestion `json:"suggestions"`
	// Skipped lists files not read (too large, unreadable) and walk limits reached.
	Skipped []string `json:"skipped,omitempty"`
}

// DerivedPreset is one preset a repository selected.
type DerivedPreset struct {
	Name string `json:"name"`
	// From lists the manifests (paths relative to the repository) or "git remote".
	From []string `json:"from"`
}

// GitRepo is a repository on a known git host, from a run's remote URL.
type GitRepo struct {
	// Host is the git host ("github.com").
	Host string `json:"host"`
	// Path is the repository path without ".git" ("owner/repo", "group/sub/project").
	Path string `json:"path"`
	// Preset is the git host's preset ("github").
	Preset string `json:"preset"`
}

// Suggestion is a host a repository names that its policy may lack: a value a caller can
// turn into an access request. It never carries credentials or a query.
type Suggestion struct {
	Host string `json:"host"`
	Port int    `json:"port"`
	// URL is the address as written, without user info, query or fragment, shortened.
	URL string `json:"url"`
	// Source is "file:line" (or "git remote").
	Source string `json:"source"`
	// Why says what named it ("--extra-index-url", ".npmrc registry", "git dependency").
	Why string `json:"why"`
}

// gitHosts maps the git hosts Sluice knows to their presets and the number of path
// segments a repository has there (0: at least two, as GitLab's subgroups).
var gitHosts = map[string]struct {
	preset   string
	segments int
}{
	"github.com":    {"github", 2},
	"gitlab.com":    {"gitlab", 0},
	"bitbucket.org": {"bitbucket", 2},
}

var repoSegRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}$`)

// ParseRemote parses a git remote URL (https://host/owner/repo.git,
// git@host:owner/repo.git, ssh://git@host/owner/repo) on a known git host. Credentials
// in the URL are ignored, never returned.
func ParseRemote(remote string) (GitRepo, error) {
	host, p, err := splitRemote(remote)
	if err != nil {
		return GitRepo{}, err
	}
	gh, ok := gitHosts[host]
	if !ok {
		return GitRepo{}, fmt.Errorf("rules: remote: %q is not a known git host (known: %s)", host, strings.Join(slices.Sorted(maps.Keys(gitHosts)), ", "))
	}
	p = strings.TrimSuffix(strings.Trim(p, "/"), ".git")
	segs := strings.Split(p, "/")
	if (gh.segments > 0 && len(segs) != gh.segments) || len(segs) < 2 || len(segs) > 20 {
		return GitRepo{}, fmt.Errorf("rules: remote: %q is no repository path on %s", p, host)
	}
	for _, s := range segs {
		if !repoSegRE.MatchString(s) || s == "." || s == ".." || strings.HasSuffix(s, ".git") && s != segs[len(segs)-1] {
			return GitRepo{}, fmt.Errorf("rules: remote: bad repository path segment %q", s)
		}
	}
	return GitRepo{Host: host, Path: p, Preset: gh.preset}, nil
}

// splitRemote returns a remote's normalised host and path.
func splitRemote(remote string) (host, p string, err error) {
	remote = strings.TrimSpace(remote)
	if remote == "" {
		return "", "", errors.New("rules: remote: empty")
	}
	if !strings.Contains(remote, "://") {
		// scp-like syntax: [user@]host:path
		at := strings.LastIndex(remote, "@")
		rest := remote[at+1:]
		h, pp, ok := strings.Cut(rest, ":")
		if !ok || h == "" {
			return "", "", errors.New("rules: remote: want a URL or user@host:path")
		}
		n, err := NormalizeHost(h)
		if err != nil {
			return "", "", fmt.Errorf("rules: remote: %w", err)
		}
		return n, pp, nil
	}
	u, err := url.Parse(remote)
	if err != nil {
		return "", "", errors.New("rules: remote: not a URL")
	}
	switch u.Scheme {
	case "https", "http", "ssh", "git":
	default:
		return "", "", fmt.Errorf("rules: remote: unsupported scheme %q", u.Scheme)
	}
	n, err := NormalizeHost(u.Hostname())
	if err != nil {
		return "", "", fmt.Errorf("rules: remote: %w", err)
	}
	return n, u.Path, nil
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
			d.suggestions = append(d.suggestions, Suggestion{Host: host, Port: 443, URL: "https://" + host + "/", Source: originRemote, Why: "git remote on a host without a preset"})
		} else {
			return nil, err
		}
	}
	out := &d.Derivation
	for _, n := range slices.Sorted(maps.Keys(d.presets)) {
		from := d.presets[n]
		slices.Sort(from)
		out.Presets = append(out.Presets, DerivedPreset{Name: n, From: slices.Compact(from)})
	}
	slices.SortFunc(d.suggestions, func(a, b Suggestion) int {
		return cmpAll(strings.Compare(a.Host, b.Host), a.Port-b.Port, strings.Compare(a.Source, b.Source), strings.Compare(a.Why, b.Why))
	})
	out.Suggestions = slices.CompactFunc(d.suggestions, func(a, b Suggestion) bool { return a == b })
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

type deriver struct {
	Derivation
	presets     map[string][]string
	suggestions []Suggestion
}

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
		return fmt.Errorf("rules: derive: %w", err)
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
	host, err := NormalizeHost(u.Hostname())
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
	d.suggestions = append(d.suggestions, Suggestion{Host: host, Port: port, URL: s, Source: fmt.Sprintf("%s:%d", file, line), Why: why})
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

type parser func(d *deriver, file string, data []byte)

// manifestParser returns the parser for a file name, nil for files derivation ignores.
func manifestParser(p string) parser {
	base := path.Base(p)
	lower := strings.ToLower(base)
	switch {
	case base == "package.json":
		return parsePackageJSON
	case base == "package-lock.json" || base == "npm-shrinkwrap.json":
		return lockParser("npm", `"resolved":\s*"([^"]+)"`, "lockfile resolved URL")
	case base == "yarn.lock":
		return lockParser("npm", `(?m)^\s+resolved\s+"?([^"\s]+)`, "lockfile resolved URL")
	case base == "pnpm-lock.yaml":
		return lockParser("npm", `tarball:\s*['"]?([^'"\s}]+)`, "lockfile tarball URL")
	case base == ".npmrc" || base == ".yarnrc" || base == ".yarnrc.yml":
		return parseNpmrc
	case strings.HasPrefix(lower, "requirements") && strings.HasSuffix(lower, ".txt"),
		strings.HasPrefix(lower, "constraints") && strings.HasSuffix(lower, ".txt"),
		path.Base(path.Dir(p)) == "requirements" && strings.HasSuffix(lower, ".txt"):
		return parseRequirements
	case base == "pyproject.toml" || base == "Pipfile" || base == "poetry.lock" || base == "setup.cfg":
		return tomlParser("pypi", map[string]string{
			"url": "package index", "index-url": "--index-url", "extra-index-url": "--extra-index-url",
			"find-links": "--find-links", "git": "git dependency", "source_url": "package index",
		})
	case base == "Pipfile.lock":
		return lockParser("pypi", `"url":\s*"([^"]+)"`, "package index")
	case base == "pip.conf" || base == "pip.ini":
		return iniURLs(map[string]string{"index-url": "--index-url", "extra-index-url": "--extra-index-url", "find-links": "--find-links"})
	case base == "go.mod" || base == "go.work":
		return selects("go")
	case base == "Cargo.toml":
		return tomlParser("crates", map[string]string{"git": "git dependency", "registry-index": "registry index"})
	case base == "Cargo.lock":
		return lockParser("crates", `(?m)^source\s*=\s*"((?:git|sparse|registry)\+[^"#?]+)`, "lockfile source")
	case p == ".cargo/config.toml" || p == ".cargo/config" || strings.HasSuffix(p, "/.cargo/config.toml"):
		return tomlParser("", map[string]string{"index": "cargo registry index", "registry": "cargo registry"})
	case base == "Gemfile" || base == "gems.rb" || strings.HasSuffix(base, ".gemspec"):
		return parseGemfile
	case base == "Gemfile.lock" || base == "gems.locked":
		return lockParser("rubygems", `(?m)^\s+remote:\s*(\S+)`, "Gemfile.lock remote")
	case base == "pom.xml":
		return parsePom
	case base == "build.gradle" || base == "build.gradle.kts" || base == "settings.gradle" || base == "settings.gradle.kts":
		return parseGradle
	case base == "gradle-wrapper.properties":
		return lockParser("gradle", `distributionUrl\s*=\s*(\S+)`, "Gradle wrapper distribution")
	case base == "composer.json":
		return parseComposer
	case base == "composer.lock":
		return selects("packagist")
	case strings.HasSuffix(lower, ".csproj") || strings.HasSuffix(lower, ".fsproj") || strings.HasSuffix(lower, ".vbproj") ||
		lower == "packages.config" || lower == "directory.packages.props":
		return lockParser("nuget", `<RestoreSources>([^<]+)</RestoreSources>`, "RestoreSources")
	case lower == "nuget.config":
		return lockParser("", `<add\s[^>]*value="(https?://[^"]+)"`, "NuGet package source")
	case base == "Dockerfile" || base == "Containerfile" || strings.HasPrefix(base, "Dockerfile.") || strings.HasSuffix(lower, ".dockerfile"):
		return parseDockerfile
	case base == "Makefile" || base == "GNUmakefile" || base == "makefile" || strings.HasSuffix(base, ".mk") || base == ".envrc":
		return parseMakefile
	}
	return nil
}

// lineAt returns the 1-based line of byte offset off in data.
func lineAt(data []byte, off int) int { return bytes.Count(data[:off], []byte("\n")) + 1 }

func selects(preset string) parser {
	return func(d *deriver, file string, _ []byte) { d.selectPreset(preset, file) }
}

// lockParser selects preset ("" for none) and suggests every URL the regexp's first
// group captures.
func lockParser(preset, expr, why string) parser {
	re := regexp.MustCompile(expr)
	return func(d *deriver, file string, data []byte) {
		if preset != "" {
			d.selectPreset(preset, file)
		}
		for _, m := range re.FindAllSubmatchIndex(data, -1) {
			for u := range strings.SplitSeq(string(data[m[2]:m[3]]), ";") {
				d.suggest(file, lineAt(data, m[2]), u, why)
			}
		}
	}
}

var (
	npmGitDepRE = regexp.MustCompile(`^(git\+|git:|github:|gitlab:|bitbucket:|https?://)`)
	npmGHShort  = regexp.MustCompile(`^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+(#.*)?$`)
)

func parsePackageJSON(d *deriver, file string, data []byte) {
	d.selectPreset("npm", file)
	var pj struct {
		Deps     map[string]any `json:"dependencies"`
		Dev      map[string]any `json:"devDependencies"`
		Opt      map[string]any `json:"optionalDependencies"`
		Peer     map[string]any `json:"peerDependencies"`
		Publish  map[string]any `json:"publishConfig"`
		Override map[string]any `json:"overrides"`
	}
	if json.Unmarshal(data, &pj) != nil {
		return
	}
	for _, deps := range []map[string]any{pj.Deps, pj.Dev, pj.Opt, pj.Peer, pj.Override} {
		for _, name := range slices.Sorted(maps.Keys(deps)) {
			spec, _ := deps[name].(string)
			line := lineOfString(data, spec)
			switch {
			case strings.HasPrefix(spec, "github:") || npmGHShort.MatchString(spec) && !strings.HasPrefix(spec, "npm:") && !strings.HasPrefix(spec, "file:") && !strings.HasPrefix(spec, "link:") && !strings.HasPrefix(spec, "workspace:"):
				repo := strings.TrimPrefix(spec, "github:")
				repo, _, _ = strings.Cut(repo, "#")
				d.suggest(file, line, "https://github.com/"+repo, "git dependency "+name)
			case strings.HasPrefix(spec, "gitlab:"):
				d.suggest(file, line, "https://gitlab.com/", "git dependency "+name)
			case strings.HasPrefix(spec, "bitbucket:"):
				d.suggest(file, line, "https://bitbucket.org/", "git dependency "+name)
			case strings.HasPrefix(spec, "http://") || strings.HasPrefix(spec, "https://"):
				d.suggest(file, line, spec, "tarball dependency "+name)
			case npmGitDepRE.MatchString(spec):
				d.suggestGit(file, line, spec, "git dependency "+name)
			}
		}
	}
	if r, ok := pj.Publish["registry"].(string); ok {
		d.suggest(file, lineOfString(data, r), r, "publishConfig.registry")
	}
}

// suggestGit suggests the host of a git URL in any of its spellings (git+ssh, scp-like).
func (d *deriver) suggestGit(file string, line int, spec, why string) {
	spec, _, _ = strings.Cut(spec, "#")
	if host, _, err := splitRemote(strings.TrimPrefix(strings.TrimPrefix(spec, "git+"), "git:")); err == nil &&
		!strings.HasPrefix(spec, "http") && !strings.HasPrefix(spec, "git+http") {
		d.suggest(file, line, "https://"+host+"/", why+" (over ssh: the gateway carries https only)")
		return
	}
	d.suggest(file, line, spec, why)
}

// lineOfString returns the line of the first occurrence of s as a JSON string, 0 if none.
func lineOfString(data []byte, s string) int {
	if s == "" {
		return 0
	}
	b, _ := json.Marshal(s)
	if i := bytes.Index(data, b); i >= 0 {
		return lineAt(data, i)
	}
	return 0
}

var npmrcRE = regexp.MustCompile(`^\s*(@[A-Za-z0-9_.-]+:)?registry\s*[=:]?\s*"?([^"\s]+)|^\s*npmRegistryServer:\s*"?([^"\s]+)`)

func parseNpmrc(d *deriver, file string, data []byte) {
	d.selectPreset("npm", file)
	forLines(data, func(n int, line string) {
		// Never read auth lines ("//host/:_authToken=..."): only registry keys.
		if m := npmrcRE.FindStringSubmatch(line); m != nil {
			u := m[2] + m[3]
			why := ".npmrc registry"
			if m[1] != "" {
				why = ".npmrc " + strings.TrimSuffix(m[1], ":") + " registry"
			}
			d.suggest(file, n, u, why)
		}
	})
}

func forLines(data []byte, fn func(n int, line string)) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), maxManifestBytes)
	n := 0
	for sc.Scan() {
		n++
		fn(n, sc.Text())
	}
}

func parseRequirements(d *deriver, file string, data []byte) {
	d.selectPreset("pypi", file)
	forLines(data, func(n int, line string) {
		line, _, _ = strings.Cut(line, " #")
		fields := strings.Fields(line)
		for i := 0; i < len(fields); i++ {
			f := fields[i]
			opt, val, hasEq := strings.Cut(f, "=")
			if !strings.HasPrefix(f, "-") {
				hasEq = false
				opt = ""
			}
			next := func() string {
				if hasEq {
					return val
				}
				if i+1 < len(fields) {
					i++
					return fields[i]
				}
				return ""
			}
			switch opt {
			case "-i", "--index-url":
				d.suggest(file, n, next(), "--index-url")
			case "--extra-index-url":
				d.suggest(file, n, next(), "--extra-index-url")
			case "-f", "--find-links":
				d.suggest(file, n, next(), "--find-links")
			case "--trusted-host":
				d.suggestHost(file, n, next(), "--trusted-host")
			default:
				if strings.Contains(f, "://") && !strings.HasPrefix(f, "file:") {
					d.suggestGit(file, n, f, "direct URL requirement")
				}
			}
		}
	})
}

var tomlKeyRE = regexp.MustCompile(`^\s*"?([A-Za-z0-9_.-]+)"?\s*=\s*(.*)$`)
var quotedRE = regexp.MustCompile(`"([^"]*)"|'([^']*)'`)

// gitURLRE finds PEP 508 direct references and other "git+" URLs inside strings.
var gitURLRE = regexp.MustCompile(`git\+[a-z]+://[^\s"',]+`)

// tomlParser selects preset ("" for none) and suggests the URLs under the given keys
// (in plain, inline-table and multi-line array values) and every "git+" URL.
func tomlParser(preset string, keys map[string]string) parser {
	return func(d *deriver, file string, data []byte) {
		if preset != "" {
			d.selectPreset(preset, file)
		}
		inArray := ""
		forLines(data, func(n int, line string) {
			if strings.HasPrefix(strings.TrimSpace(line), "#") {
				return
			}
			if inArray != "" {
				for _, q := range quoted(line) {
					d.suggest(file, n, q, inArray)
				}
				if strings.Contains(line, "]") {
					inArray = ""
				}
				return
			}
			for _, u := range gitURLRE.FindAllString(line, -1) {
				d.suggestGit(file, n, u, "git dependency")
			}
			// Keys in inline tables too: foo = { git = "https://..." }.
			for _, part := range strings.Split(line, ",") {
				part = strings.TrimLeft(part, " {")
				if i := strings.Index(part, "{"); i >= 0 {
					part = part[i+1:]
				}
				m := tomlKeyRE.FindStringSubmatch(part)
				if m == nil {
					continue
				}
				why, ok := keys[m[1]]
				if !ok {
					continue
				}
				qs := quoted(m[2])
				for _, q := range qs {
					if why == "git dependency" {
						d.suggestGit(file, n, q, why)
					} else {
						d.suggest(file, n, q, why)
					}
				}
				if strings.HasPrefix(strings.TrimSpace(m[2]), "[") && !strings.Contains(m[2], "]") {
					inArray = why
				}
			}
		})
	}
}

func quoted(s string) []string {
	var out []string
	for _, m := range quotedRE.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1]+m[2])
	}
	return out
}

func iniURLs(keys map[string]string) parser {
	return func(d *deriver, file string, data []byte) {
		cont := ""
		forLines(data, func(n int, line string) {
			t := strings.TrimSpace(line)
			if cont != "" && line != t && t != "" { // an indented continuation line
				d.suggest(file, n, t, cont)
				return
			}
			cont = ""
			k, v, ok := strings.Cut(t, "=")
			if !ok {
				return
			}
			if why, ok := keys[strings.TrimSpace(k)]; ok {
				for f := range strings.FieldsSeq(v) {
					d.suggest(file, n, f, why)
				}
				cont = why
			}
		})
	}
}

var (
	gemSourceRE = regexp.MustCompile(`^\s*source\s*\(?\s*["']([^"']+)["']`)
	gemGitRE    = regexp.MustCompile(`(?:\bgit:|:git\s*=>)\s*["']([^"']+)["']|^\s*git\s+["']([^"']+)["']`)
	gemGHRE     = regexp.MustCompile(`(?:\bgithub:|:github\s*=>)\s*["']([^"']+)["']`)
)

func parseGemfile(d *deriver, file string, data []byte) {
	d.selectPreset("rubygems", file)
	forLines(data, func(n int, line string) {
		if m := gemSourceRE.FindStringSubmatch(line); m != nil {
			d.suggest(file, n, m[1], "Gemfile source")
		}
		if m := gemGitRE.FindStringSubmatch(line); m != nil {
			d.suggestGit(file, n, m[1]+m[2], "git gem")
		}
		if m := gemGHRE.FindStringSubmatch(line); m != nil {
			d.suggest(file, n, "https://github.com/"+m[1], "git gem")
		}
	})
}

var (
	pomRepoRE = regexp.MustCompile(`(?s)<(repository|pluginRepository|mirror)>(.*?)</(?:repository|pluginRepository|mirror)>`)
	pomURLRE  = regexp.MustCompile(`<url>\s*([^<\s]+)\s*</url>`)
)

func parsePom(d *deriver, file string, data []byte) {
	d.selectPreset("maven", file)
	for _, m := range pomRepoRE.FindAllSubmatchIndex(data, -1) {
		block := data[m[4]:m[5]]
		if u := pomURLRE.FindSubmatchIndex(block); u != nil {
			d.suggest(file, lineAt(data, m[4]+u[2]), string(block[u[2]:u[3]]), "Maven "+string(data[m[2]:m[3]]))
		}
	}
}

var gradleURLRE = regexp.MustCompile(`["'](https?://[^"'\s]+)["']`)

func parseGradle(d *deriver, file string, data []byte) {
	d.selectPreset("maven", file)
	d.selectPreset("gradle", file)
	forLines(data, func(n int, line string) {
		if !strings.Contains(line, "maven") && !strings.Contains(line, "url") && !strings.Contains(line, "ivy") {
			return
		}
		for _, m := range gradleURLRE.FindAllStringSubmatch(line, -1) {
			d.suggest(file, n, m[1], "Gradle repository")
		}
	})
}

func parseComposer(d *deriver, file string, data []byte) {
	d.selectPreset("packagist", file)
	var cj struct {
		Repositories json.RawMessage `json:"repositories"`
	}
	if json.Unmarshal(data, &cj) != nil || len(cj.Repositories) == 0 {
		return
	}
	type repo struct {
		Type string `json:"type"`
		URL  string `json:"url"`
	}
	var list []repo
	if json.Unmarshal(cj.Repositories, &list) != nil {
		var named map[string]repo // the object form: {"name": {...}}
		if json.Unmarshal(cj.Repositories, &named) != nil {
			return
		}
		for _, k := range slices.Sorted(maps.Keys(named)) {
			list = append(list, named[k])
		}
	}
	for _, r := range list {
		if r.URL == "" {
			continue
		}
		why := "composer repository (" + r.Type + ")"
		if r.Type == "vcs" || r.Type == "git" {
			d.suggestGit(file, lineOfString(data, r.URL), r.URL, why)
		} else {
			d.suggest(file, lineOfString(data, r.URL), r.URL, why)
		}
	}
}

var (
	fromRE     = regexp.MustCompile(`(?i)^\s*FROM\s+(?:--platform=\S+\s+)?(\S+)`)
	aptRE      = regexp.MustCompile(`\bapt(?:-get)?\s+(?:[-\w=]+\s+)*(?:install|update|upgrade|dist-upgrade)\b`)
	apkRE      = regexp.MustCompile(`\bapk\s+(?:[-\w=]+\s+)*(?:add|update|upgrade)\b`)
	dnfRE      = regexp.MustCompile(`\b(?:dnf|yum|microdnf)\s+(?:[-\w=]+\s+)*(?:install|update|upgrade|makecache)\b`)
	envURLRE   = regexp.MustCompile(`\b(GOPROXY|PIP_INDEX_URL|PIP_EXTRA_INDEX_URL|NPM_CONFIG_REGISTRY|npm_config_registry|UV_INDEX_URL|UV_EXTRA_INDEX_URL)\s*[:?]?[= ]\s*["']?([^"'\s]+)`)
	optURLRE   = regexp.MustCompile(`(--index-url|--extra-index-url|--registry|-i)[= ]\s*["']?(https?://[^"'\s]+)`)
	npmRegSetR = regexp.MustCompile(`config\s+set\s+registry\s+["']?(https?://[^"'\s]+)`)
)

// dockerFamily tells the distribution of a base image name, "" when unknown.
func dockerFamily(image string) string {
	img := strings.ToLower(image)
	name, tag, _ := strings.Cut(path.Base(img), ":")
	switch {
	case strings.Contains(img, "$"):
		return ""
	case strings.Contains(name, "alpine") || strings.Contains(tag, "alpine"):
		return "alpine"
	case strings.Contains(name, "ubuntu") || strings.Contains(tag, "jammy") || strings.Contains(tag, "noble") || strings.Contains(tag, "focal"):
		return "ubuntu"
	case strings.Contains(name, "fedora"):
		return "fedora"
	case strings.HasPrefix(name, "ubi") || strings.Contains(img, "redhat") || strings.Contains(name, "rhel") ||
		strings.Contains(name, "centos") || strings.Contains(name, "rockylinux") || strings.Contains(name, "almalinux"):
		return "rhel"
	case name == "scratch":
		return ""
	}
	// Debian is the base of the official language images (python, node, golang, ruby).
	return "debian"
}

func parseDockerfile(d *deriver, file string, data []byte) {
	family := ""
	// Join continuation lines, remembering where each logical line starts.
	var logical strings.Builder
	start := 0
	flush := func() {
		line := logical.String()
		logical.Reset()
		if m := fromRE.FindStringSubmatch(line); m != nil {
			family = dockerFamily(m[1])
			return
		}
		switch {
		case aptRE.MatchString(line):
			f := family
			if f != "ubuntu" {
				f = "debian"
			}
			d.selectPreset(f, file)
		case apkRE.MatchString(line):
			d.selectPreset("alpine", file)
		case dnfRE.MatchString(line):
			f := family
			if f != "rhel" {
				f = "fedora"
			}
			d.selectPreset(f, file)
		}
		for _, m := range envURLRE.FindAllStringSubmatch(line, -1) {
			for u := range strings.SplitSeq(m[2], ",") {
				for u := range strings.SplitSeq(u, "|") {
					d.suggest(file, start, u, m[1])
				}
			}
		}
		for _, m := range optURLRE.FindAllStringSubmatch(line, -1) {
			d.suggest(file, start, m[2], m[1])
		}
		for _, m := range npmRegSetR.FindAllStringSubmatch(line, -1) {
			d.suggest(file, start, m[1], "npm config set registry")
		}
	}
	forLines(data, func(n int, line string) {
		if logical.Len() == 0 {
			start = n
		}
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			return
		}
		if t, ok := strings.CutSuffix(strings.TrimRight(line, " \t"), "\\"); ok {
			logical.WriteString(t + " ")
			return
		}
		logical.WriteString(line)
		flush()
	})
	if logical.Len() > 0 {
		flush()
	}
}

func parseMakefile(d *deriver, file string, data []byte) {
	forLines(data, func(n int, line string) {
		for _, m := range envURLRE.FindAllStringSubmatch(line, -1) {
			for u := range strings.SplitSeq(m[2], ",") {
				for u := range strings.SplitSeq(u, "|") {
					d.suggest(file, n, u, m[1])
				}
			}
		}
		for _, m := range optURLRE.FindAllStringSubmatch(line, -1) {
			d.suggest(file, n, m[2], m[1])
		}
	})
}
