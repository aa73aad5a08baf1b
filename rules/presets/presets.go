// Package presets holds the allowlist presets Sluice ships, as versioned YAML data.
//
// Each file is one preset; package rules parses and validates them strictly at start-up
// (see rules.Presets). A preset entry names its hosts either literally (host:) or through
// a host slot (host_from:), which the operator fills in the config under presets.hosts.
// Slots exist for registries whose host names this repository does not spell out: the
// npm and Yarn registries (npm_registry, yarn_registry), the Go module proxy and checksum
// database (go_proxy, go_sumdb) and Debian's mirrors (debian_mirror, debian_security),
// plus optional extra mirrors (fedora_mirror). A slot left unset contributes nothing.
// Entries without ports allow 443 only.
package presets

import "embed"

// FS holds the preset files, one *.yaml per preset.
//
//go:embed *.yaml
var FS embed.FS
