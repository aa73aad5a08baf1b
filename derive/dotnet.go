package derive

import "strings"

// dotnetManifests: project files, packages.config and central package management select
// NuGet; nuget.config names package sources.
var dotnetManifests = []manifest{
	{func(_, _, lower string) bool {
		return strings.HasSuffix(lower, ".csproj") || strings.HasSuffix(lower, ".fsproj") || strings.HasSuffix(lower, ".vbproj") ||
			lower == "packages.config" || lower == "directory.packages.props"
	}, lockParser("nuget", `<RestoreSources>([^<]+)</RestoreSources>`, "RestoreSources")},
	{func(_, _, lower string) bool { return lower == "nuget.config" }, lockParser("", `<add\s[^>]*value="(https?://[^"]+)"`, "NuGet package source")},
}
