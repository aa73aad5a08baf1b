package derive

import (
	"path"
	"strings"
)

// pythonManifests: requirements and constraints files, pyproject.toml, Pipfile and its
// lock, poetry.lock, setup.cfg, pip.conf.
var pythonManifests = []manifest{
	{isRequirements, parseRequirements},
	{named("pyproject.toml", "Pipfile", "poetry.lock", "setup.cfg"), tomlParser("pypi", map[string]string{
		"url": "package index", "index-url": "--index-url", "extra-index-url": "--extra-index-url",
		"find-links": "--find-links", "git": "git dependency", "source_url": "package index",
	})},
	{named("Pipfile.lock"), lockParser("pypi", `"url":\s*"([^"]+)"`, "package index")},
	{named("pip.conf", "pip.ini"), iniURLs(map[string]string{"index-url": "--index-url", "extra-index-url": "--extra-index-url", "find-links": "--find-links"})},
}

// isRequirements matches requirements*.txt, constraints*.txt and requirements/*.txt.
func isRequirements(p, _, lower string) bool {
	return strings.HasPrefix(lower, "requirements") && strings.HasSuffix(lower, ".txt") ||
		strings.HasPrefix(lower, "constraints") && strings.HasSuffix(lower, ".txt") ||
		path.Base(path.Dir(p)) == "requirements" && strings.HasSuffix(lower, ".txt")
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

// iniURLs suggests the URLs under the given keys of an INI file (pip.conf), on the key's
// line and on its indented continuation lines.
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
