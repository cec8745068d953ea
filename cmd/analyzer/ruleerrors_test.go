package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// diagnose says on stderr which rules failed at run time, how often and
// with what error; a clean run says nothing of the kind.
func TestDiagnoseReportsRuleErrors(t *testing.T) {
	dir, logs := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(dir, "broken.yaml"), brokenRule(t), 0o644)
	log := filepath.Join(logs, "n1.log")
	os.WriteFile(log, []byte("zorblax one\nzorblax two\n"), 0o644)
	tests := []struct {
		name string
		args []string
		want string // "" = no summary line
	}{
		{"rule errors", []string{"diagnose", "--rules-only", "--rules", dir, log}, "warning: 1 rule(s) had runtime expression errors and may have missed findings: broken: 2 error(s), last: "},
		{"built-in pack on a healthy log", []string{"diagnose", "../../testdata/logs/nccl-runs/healthy.log"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errs, code := analyzer(t, tt.args...)
			if code != 0 {
				t.Fatalf("exit %d\n%s%s", code, out, errs)
			}
			if tt.want == "" {
				if strings.Contains(errs, "runtime expression errors") {
					t.Errorf("unexpected summary: %s", errs)
				}
				return
			}
			if !strings.Contains(errs, tt.want) || !strings.Contains(errs, "max") {
				t.Errorf("stderr lacks %q (and the error text):\n%s", tt.want, errs)
			}
		})
	}
}

// rules test fails a case in which a rule erred, even though the case's
// expectations hold.
func TestRulesTestFailsOnRuleErrors(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "broken.yaml"), brokenRule(t), 0o644)
	os.WriteFile(filepath.Join(dir, "broken.test.yaml"), []byte(`tests:
  - name: errs
    logs: {n1: "zorblax one"}
    absent: [broken]
  - name: fine
    logs: {n1: "hello"}
    absent: [broken]
`), 0o644)
	out, _, code := analyzer(t, "rules", "test", dir)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s", code, out)
	}
	for _, want := range []string{"FAIL  " + filepath.Join(dir, "broken.test.yaml") + ": errs",
		"rule broken: 1 runtime expression error(s), last: ", "3 passed, 1 failed"} { // 3: a case and the two catalog entries' tests
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// brokenRule is the shared rule that errs at run time.
func brokenRule(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("../../testdata/rules/erroring/broken.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return b
}
