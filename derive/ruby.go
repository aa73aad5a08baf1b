package derive

import (
	"regexp"
	"strings"
)

// rubyManifests: Gemfile (gems.rb), gemspecs and the lockfile.
var rubyManifests = []manifest{
	{func(_, base, _ string) bool {
		return base == "Gemfile" || base == "gems.rb" || strings.HasSuffix(base, ".gemspec")
	}, parseGemfile},
	{named("Gemfile.lock", "gems.locked"), lockParser("rubygems", `(?m)^\s+remote:\s*(\S+)`, "Gemfile.lock remote")},
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
