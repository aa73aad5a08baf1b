package derive

import (
	"testing"
	"testing/fstest"
)

func TestDotnet(t *testing.T) {
	runCases(t, []deriveCase{
		{
			name: "project and package source", dir: "dotnet",
			presets: map[string][]string{"nuget": {"App.csproj"}},
			suggest: []string{"nuget.corp.test:443 NuGet package source"},
			sources: []string{"nuget.corp.test nuget.config:4"},
		},
		{
			name: "RestoreSources lists and central package management",
			files: fstest.MapFS{
				"Lib.fsproj":               {Data: []byte("<Project>\n<PropertyGroup><RestoreSources>https://a.corp.test/v3/index.json;https://b.corp.test/v3/index.json</RestoreSources></PropertyGroup>\n</Project>\n")},
				"Directory.Packages.props": {Data: []byte("<Project/>\n")},
				"NuGet.Config":             {Data: []byte("<add key=\"local\" value=\"C:\\feed\" />\n")},
			},
			presets: map[string][]string{"nuget": {"Directory.Packages.props", "Lib.fsproj"}},
			suggest: []string{"a.corp.test:443 RestoreSources", "b.corp.test:443 RestoreSources"},
		},
	})
}

func FuzzDotnet(f *testing.F) {
	fuzzManifests(f, []string{"App.csproj", "packages.config", "nuget.config"},
		"<RestoreSources>https://a.test/;https://b.test/</RestoreSources>",
		"<add key=\"x\" value=\"https://n.test/v3/index.json\" />",
	)
}
