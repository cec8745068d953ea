package ruletest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultline/faultline/rule"
)

// A case fails when a rule erred at run time (it would silently never
// fire), even if everything the case expects holds.
func TestCaseFailsOnRuleErrors(t *testing.T) {
	rs, problems := rule.Parse("broken.yaml", brokenRule(t))
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	tests := []struct {
		name, log string
		want      string // "" = passes
	}{
		{"max of an empty list", "zorblax one", "rule broken: 1 runtime expression error(s), last: "},
		{"no error", "count 3\nzorblax one", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fixture := "tests:\n  - name: c\n    logs:\n      n1: |\n        " + strings.ReplaceAll(tt.log, "\n", "\n        ") + "\n    absent: [nothing]\n"
			res, err := RunFile(context.Background(), "broken.test.yaml", []byte(fixture), rs)
			if err != nil {
				t.Fatal(err)
			}
			got := strings.Join(res[0].Failures, "\n")
			if tt.want == "" {
				if got != "" {
					t.Errorf("want a pass, got %s", got)
				}
				return
			}
			if !strings.Contains(got, tt.want) || !strings.Contains(got, "max") {
				t.Errorf("failures %q lack %q and the error text", got, tt.want)
			}
		})
	}
}

// Fixture files resolve against the base given (the checkout's rules/ for
// the built-in pack); without one, a case whose files are missing is
// skipped with the reason, and inline cases still run.
func TestFixtureBase(t *testing.T) {
	rs, err := rule.LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	if err := os.WriteFile(filepath.Join(base, "n.log"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fixture := []byte(`tests:
  - name: file
    files: {n: [n.log]}
    no_findings: true
  - name: inline
    logs: {n: "hello"}
    no_findings: true
`)
	tests := []struct {
		name    string
		opts    runOptions
		skipped []string // per case: "" = ran and passed
	}{
		{"base has the file", runOptions{base: base}, []string{"", ""}},
		{"missing file skipped", runOptions{base: t.TempDir(), skipMissing: "no checkout"}, []string{"no checkout", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := runFile(context.Background(), "elsewhere/x.test.yaml", fixture, tt.opts, rs)
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range res {
				if r.Skipped != tt.skipped[i] || !r.Passed() {
					t.Errorf("case %s: skipped %q failures %v, want skipped %q and no failure", r.Name, r.Skipped, r.Failures, tt.skipped[i])
				}
			}
		})
	}
}

// brokenRule is the shared rule that errs at run time.
func brokenRule(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "rules", "erroring", "broken.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
