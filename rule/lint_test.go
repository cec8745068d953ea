package rule

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"testing/fstest"
)

// lintDoc is a valid rule reading the built-in fact tried, with a summary
// to vary.
func lintDoc(summary string) string {
	return `id: t
cause: cuda-oom
title: 'oom on {{ join .nodes ", " }}'
remediation: r
cases:
  - when: len(tried) > 0
    severity: critical
    confidence: high
    summary: ` + summary + `
`
}

// lintEntry is a valid catalog entry with keys of its matcher to vary.
func lintEntry(match string) string {
	return `project: lint
facts:
  lint_word: {description: a word}
messages:
  - id: lint.x.word
    subsystem: x
    printed_by: nothing
    versions: '1.0'
    meaning: benign
    match:
      regex: 'lint (?P<w>\w+)'
` + match + `
    facts: {lint_word: $w}
    example: 'lint foo'
    yields: {lint_word: [foo]}
`
}

// Names the engine would silently never match are lint errors at the line
// and column of the offending value: template fields of rules, sources,
// levels and fields of catalog matchers.
func TestStrictLint(t *testing.T) {
	okSummary := `'{{ first .tried }}'`
	tests := []struct {
		name    string
		match   string // extra keys of the entry's matcher (indented under it)
		summary string
		want    string // "line:col: text"; "" = lints clean
	}{
		{"valid source and level", "      sources: [vllm, torch]\n      levels: [error]", okSummary, ""},
		{"unknown source", "      sources: [vllm, vllmm]", okSummary, `cat.yaml:12:23: unknown source "vllmm"`},
		{"unknown level", "      levels: [warn]", okSummary, `cat.yaml:12:16: unknown level "warn"`},
		{"reserved and fact fields", "", `'{{ .cluster }} {{ .launch }} {{ .owned.tried }} {{ range .pairs.tried }}{{ .Node }}={{ .Value }}{{ end }} {{ $.tried }}'`, ""},
		{"unknown template field", "", `'{{ .nope }}'`, `x.yaml:9:14: summary (template line 1): unknown field .nope`},
		{"unknown fact under owned", "", `'{{ .owned.nope }}'`, `x.yaml:9:14: summary (template line 1): unknown field .owned.nope`},
		{"unknown field of a pair", "", `'{{ range .pairs.tried }}{{ .Rank }}{{ end }}'`, `unknown field .Rank of a pair`},
		{"unknown field via $ inside range", "", `'{{ range .tried }}{{ $.nope }}{{ end }}'`, `unknown field .nope`},
		{"unknown field in a function argument", "", `'{{ join .nope ", " }}'`, `unknown field .nope`},
		{"unknown field on the second template line", "", "|-\n      ok\n      {{ if .nope }}x{{ end }}", `summary (template line 2): unknown field .nope`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadFSPack(fstest.MapFS{
				"catalog/cat.yaml": {Data: []byte(lintEntry(tt.match))},
				"x.yaml":           {Data: []byte(lintDoc(tt.summary))},
			}, ".", "d")
			if tt.want == "" {
				if err != nil {
					t.Fatalf("want no problem, got %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("want a problem containing %q, got %v", tt.want, err)
			}
		})
	}
}

// The rules serve hot-reloads go through the same compile: a typo in a
// source is rejected with file:line there too.
func TestStrictLintOnLoad(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "catalog"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "catalog", "cat.yaml"), []byte(lintEntry("      sources: [vllmm]")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "t.yaml"), []byte(lintDoc(`'{{ .nope }}'`)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load([]string{dir}, true)
	var le *LoadError
	if !errors.As(err, &le) {
		t.Fatalf("Load = %v, want a LoadError", err)
	}
	for _, want := range []string{
		filepath.Join(dir, "catalog", "cat.yaml") + `:12:17: unknown source "vllmm"`,
		filepath.Join(dir, "t.yaml") + ":9:14: summary (template line 1): unknown field .nope",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("load error lacks %q:\n%v", want, err)
		}
	}
}

// A field a matcher may name must be one the parsers set: this keeps
// parserFields in step with p.set("...") in parsers/parse*.go.
func TestParserFieldsAreKnown(t *testing.T) {
	files, err := filepath.Glob("../parsers/parse*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("parsers sources not found: %v", err)
	}
	set := regexp.MustCompile(`p\.set\("([a-z_0-9]+)"`)
	seen := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range set.FindAllStringSubmatch(string(data), -1) {
			seen[m[1]] = true
		}
	}
	var missing, stale []string
	for k := range seen {
		if !containsString(parserFields, k) {
			missing = append(missing, k)
		}
	}
	for _, k := range parserFields {
		if !seen[k] {
			stale = append(stale, k)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 || len(stale) > 0 {
		t.Errorf("rule/lint.go parserFields: add %v (set by parsers), remove %v (no parser sets them)", missing, stale)
	}
}
