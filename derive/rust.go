package derive

import "strings"

// rustManifests: Cargo.toml, Cargo.lock and cargo's config.
var rustManifests = []manifest{
	{named("Cargo.toml"), tomlParser("crates", map[string]string{"git": "git dependency", "registry-index": "registry index"})},
	{named("Cargo.lock"), lockParser("crates", `(?m)^source\s*=\s*"((?:git|sparse|registry)\+[^"#?]+)`, "lockfile source")},
	{isCargoConfig, tomlParser("", map[string]string{"index": "cargo registry index", "registry": "cargo registry"})},
}

// isCargoConfig matches .cargo/config(.toml) at the root and config.toml in any .cargo
// directory below.
func isCargoConfig(p, _, _ string) bool {
	return p == ".cargo/config.toml" || p == ".cargo/config" || strings.HasSuffix(p, "/.cargo/config.toml")
}
