package derive

import (
	"encoding/json"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// npmManifests: package.json, the npm, yarn and pnpm lockfiles, .npmrc and .yarnrc.
var npmManifests = []manifest{
	{named("package.json"), parsePackageJSON},
	{named("package-lock.json", "npm-shrinkwrap.json"), lockParser("npm", `"resolved":\s*"([^"]+)"`, "lockfile resolved URL")},
	{named("yarn.lock"), lockParser("npm", `(?m)^\s+resolved\s+"?([^"\s]+)`, "lockfile resolved URL")},
	{named("pnpm-lock.yaml"), lockParser("npm", `tarball:\s*['"]?([^'"\s}]+)`, "lockfile tarball URL")},
	{named(".npmrc", ".yarnrc", ".yarnrc.yml"), parseNpmrc},
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
