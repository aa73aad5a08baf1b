package derive

import (
	"regexp"
	"strings"
)

// makeManifests: Makefiles and .envrc name registries in environment variables and
// command-line options; they select no preset.
var makeManifests = []manifest{
	{func(_, base, _ string) bool {
		return base == "Makefile" || base == "GNUmakefile" || base == "makefile" || strings.HasSuffix(base, ".mk") || base == ".envrc"
	}, parseMakefile},
}

// Registries named in build scripts (Makefiles, Dockerfiles' RUN lines).
var (
	envURLRE = regexp.MustCompile(`\b(GOPROXY|PIP_INDEX_URL|PIP_EXTRA_INDEX_URL|NPM_CONFIG_REGISTRY|npm_config_registry|UV_INDEX_URL|UV_EXTRA_INDEX_URL)\s*[:?]?[= ]\s*["']?([^"'\s]+)`)
	optURLRE = regexp.MustCompile(`(--index-url|--extra-index-url|--registry|-i)[= ]\s*["']?(https?://[^"'\s]+)`)
)

// suggestScriptURLs suggests the registries a build script line names in environment
// variables (each of a GOPROXY list) and in package managers' options.
func (d *deriver) suggestScriptURLs(file string, n int, line string) {
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
}

func parseMakefile(d *deriver, file string, data []byte) {
	forLines(data, func(n int, line string) { d.suggestScriptURLs(file, n, line) })
}
