package derive

import (
	"testing"
	"testing/fstest"
)

func TestJava(t *testing.T) {
	runCases(t, []deriveCase{
		{
			name: "Maven and Gradle repositories", dir: "jvm",
			presets: map[string][]string{"maven": {"build.gradle.kts", "pom.xml"}, "gradle": {"build.gradle.kts"}},
			suggest: []string{"maven.corp.test:443 Maven repository", "maven.corp.test:443 Gradle repository", "jitpack.example.test:443 Gradle repository"},
			sources: []string{"maven.corp.test pom.xml:10", "jitpack.example.test build.gradle.kts:8"},
		},
		{
			name: "mirrors and plugin repositories; project URLs are no repositories",
			files: fstest.MapFS{"pom.xml": {Data: []byte("<project>\n<url>https://project.example.test/</url>\n<pluginRepositories><pluginRepository>\n<id>p</id>\n" +
				"<url>https://plugins.corp.test/m2</url></pluginRepository></pluginRepositories>\n<mirror><url> http://mirror.corp.test/ </url></mirror>\n</project>\n")}},
			presets: map[string][]string{"maven": {"pom.xml"}},
			suggest: []string{"plugins.corp.test:443 Maven pluginRepository", "mirror.corp.test:80 Maven mirror"},
			sources: []string{"plugins.corp.test pom.xml:5"},
			never:   []string{"project.example.test"},
		},
		{
			name: "Gradle wrapper and settings",
			files: fstest.MapFS{
				"gradle/wrapper/gradle-wrapper.properties": {Data: []byte("distributionUrl=https\\://dist.corp.test/gradle-8.8-bin.zip\n")},
				"settings.gradle": {Data: []byte("pluginManagement { repositories { maven { url 'https://plugins.gradle.corp.test/m2' } } }\n" +
					"// see \"https://docs.example.test/\"\n")},
			},
			presets: map[string][]string{"gradle": {"gradle/wrapper/gradle-wrapper.properties", "settings.gradle"}, "maven": {"settings.gradle"}},
			suggest: []string{"plugins.gradle.corp.test:443 Gradle repository"},
			never:   []string{"docs.example.test"}, // a line without maven, url or ivy
		},
	})
}

func FuzzJava(f *testing.F) {
	fuzzManifests(f, []string{"pom.xml", "build.gradle", "build.gradle.kts", "gradle-wrapper.properties"},
		"<repositories><repository><url>https://m.test/</url></repository></repositories>",
		"repositories { maven { url \"https://m.test/\" } }\n",
		"distributionUrl=https://d.test/g.zip\n",
	)
}
