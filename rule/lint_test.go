package rule

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// lintDoc is a valid rule with one matcher and one template to vary.
func lintDoc(matcher, summary string) string {
	return `id: t
cause: cuda-oom
severity: critical
title: 'oom on {{ join .nodes ", " }}'
facts:
  tried:
    from:
      - regex: 'Tried to allocate (?P<value>\S+)'
` + matcher + `
condition: len(tried) > 0
summary: ` + summary + `
remediation: r
`
}

// Names the engine would silently never match are lint errors at the line
// and column of the offending value.
func TestStrictLint(t *testing.T) {
	okSummary := `'{{ first .tried }}'`
	tests := []struct {
		name    string
		matcher string // extra keys of the matcher (indented under it)
		summary string
		want    string // "line:col: text"; "" = lints clean
	}{
		{"valid source and level", "        sources: [vllm, torch]\n        levels: [error]", okSummary, ""},
		{"unknown source", "        sources: [vllm, vllmm]", okSummary, `9:25: unknown source "vllmm"`},
		{"unknown level", "        levels: [warn]", okSummary, `9:18: unknown level "warn"`},
		{"note with version", "        note: 'NCCL 2.26 bootstrap.cc prints this'", okSummary, ""},
		{"note without version", "        note: 'seen in newer versions'", okSummary, `9:15: note "seen in newer versions" names no version`},
		{"note too short", "        note: 'NCCL 2.26'", okSummary, `9:15: note "NCCL 2.26" has 2 word(s)`},
		{"reserved and fact fields", "", `'{{ .cluster }} {{ .launch }} {{ .owned.tried }} {{ range .pairs.tried }}{{ .Node }}={{ .Value }}{{ end }} {{ $.tried }}'`, ""},
		{"unknown template field", "", `'{{ .nope }}'`, `11:10: summary (template line 1): unknown field .nope`},
		{"unknown fact under owned", "", `'{{ .owned.nope }}'`, `11:10: summary (template line 1): unknown field .owned.nope`},
		{"unknown field of a pair", "", `'{{ range .pairs.tried }}{{ .Rank }}{{ end }}'`, `unknown field .Rank of a pair`},
		{"unknown field via $ inside range", "", `'{{ range .tried }}{{ $.nope }}{{ end }}'`, `unknown field .nope`},
		{"unknown field in a function argument", "", `'{{ join .nope ", " }}'`, `unknown field .nope`},
		{"unknown field on the second template line", "", "|-\n  ok\n  {{ if .nope }}x{{ end }}", `summary (template line 2): unknown field .nope`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, problems := Parse("x.yaml", []byte(lintDoc(tt.matcher, tt.summary)))
			if tt.want == "" {
				if len(problems) > 0 {
					t.Fatalf("want no problem, got %v", problems)
				}
				return
			}
			var got []string
			for _, p := range problems {
				got = append(got, p.String())
				if strings.Contains(p.String(), tt.want) && strings.HasPrefix(p.String(), "x.yaml:") {
					return
				}
			}
			t.Errorf("want a problem containing %q, got %q", tt.want, got)
		})
	}
}

// The rules serve hot-reloads go through the same compile: a typo in a
// source is rejected with file:line there too.
func TestStrictLintOnLoad(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "t.yaml"), []byte(lintDoc("        sources: [vllmm]", `'{{ .nope }}'`)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load([]string{dir}, true)
	var le *LoadError
	if !errors.As(err, &le) {
		t.Fatalf("Load = %v, want a LoadError", err)
	}
	for _, want := range []string{
		filepath.Join(dir, "t.yaml") + `:9:19: unknown source "vllmm"`,
		filepath.Join(dir, "t.yaml") + ":11:10: summary (template line 1): unknown field .nope",
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
