package derive

import (
	"regexp"
	"strings"
)

// javaManifests: Maven's pom.xml, Gradle build and settings scripts and the wrapper.
var javaManifests = []manifest{
	{named("pom.xml"), parsePom},
	{named("build.gradle", "build.gradle.kts", "settings.gradle", "settings.gradle.kts"), parseGradle},
	{named("gradle-wrapper.properties"), lockParser("gradle", `distributionUrl\s*=\s*(\S+)`, "Gradle wrapper distribution")},
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
