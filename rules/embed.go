// Package rules holds Faultline's built-in rule pack: one YAML file per rule,
// with its unit-test fixtures beside it (*.test.yaml), the causes rules name
// (causes.yaml) and the upstream message catalog that fills the facts rules
// read (catalog/*.yaml). The pack is embedded so that a single analyzer
// binary works anywhere.
package rules

import "embed"

// FS holds the rule files, their fixtures, the causes and the catalog.
//
//go:embed *.yaml catalog/*.yaml
var FS embed.FS
