// Package packs holds Sluice's detection rule packs, gitleaks TOML kept as data.
package packs

import "embed"

// FS holds the shipped packs (*.toml), applied in name order over gitleaks' defaults.
//
//go:embed *.toml
var FS embed.FS
