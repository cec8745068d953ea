// Package rules holds Faultline's built-in rule pack: one YAML file per rule,
// with its unit-test fixtures beside it (*.test.yaml). The pack is embedded so
// that a single analyzer binary works anywhere.
package rules

import "embed"

// FS holds the rule files and their fixtures.
//
//go:embed *.yaml
var FS embed.FS
