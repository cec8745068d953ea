package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func analyzer(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, nil, &out, &errb)
	return out.String(), errb.String(), code
}

// The built-in pack lints clean and all its fixtures pass, through the very
// commands an SRE runs.
func TestRulesLintAndTestBuiltinPack(t *testing.T) {
	if out, errs, code := analyzer(t, "rules", "lint", "../../rules"); code != 0 || !strings.Contains(out, "rules OK") {
		t.Fatalf("rules lint rules/: exit %d\n%s%s", code, out, errs)
	}
	out, errs, code := analyzer(t, "rules", "test", "../../rules")
	if code != 0 || !strings.Contains(out, " 0 failed") {
		t.Fatalf("rules test rules/: exit %d\n%s%s", code, out, errs)
	}
	// Without DIR: the pack embedded in the binary.
	if out, errs, code := analyzer(t, "rules", "lint"); code != 0 {
		t.Fatalf("rules lint (embedded): exit %d\n%s%s", code, out, errs)
	}
}

func TestRulesLintBrokenFiles(t *testing.T) {
	_, errs, code := analyzer(t, "rules", "lint", "../../rule/testdata/bad")
	if code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	for _, want := range []string{
		"../../rule/testdata/bad/unknown-key.yaml:9:",
		"../../rule/testdata/bad/bad-regex.yaml:8:",
		"../../rule/testdata/bad/bad-expr.yaml:9:",
		"../../rule/testdata/bad/unknown-cause.yaml:2:",
		"../../rule/testdata/bad/syntax.yaml:3:",
		"../../rule/testdata/bad/dup-b.yaml:1:1: duplicate rule id",
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("lint output lacks %q:\n%s", want, errs)
		}
	}
}

// A catalog's problems, its entries' examples included, are lint errors at
// file:line:col.
func TestRulesLintCatalog(t *testing.T) {
	_, errs, code := analyzer(t, "rules", "lint", "../../rule/testdata/badcatalog")
	if code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	for _, want := range []string{
		"../../rule/testdata/badcatalog/catalog/demo.yaml:41:7: unknown field \"colour\"",
		"../../rule/testdata/badcatalog/catalog/demo.yaml:32:14: regex:",
		"../../rule/testdata/badcatalog/catalog/demo.yaml:63:14: entry demo.net.refused: word: yields [\"peer2\"], the example gives [\"peer1\"]",
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("lint output lacks %q:\n%s", want, errs)
		}
	}
}

// A failing fixture gives exit 1 and shows expected against got.
func TestRulesTestReportsDiff(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "oom.yaml"), []byte(`id: my-oom
cause: cuda-oom
severity: critical
title: oom
facts:
  tried:
    from:
      - regex: 'Tried to allocate (?P<value>[\d.]+ GiB)'
condition: len(tried) > 0
summary: tried {{ first .tried }}
remediation: lower --gpu-memory-utilization
`), 0o644)
	os.WriteFile(filepath.Join(dir, "oom.test.yaml"), []byte(`tests:
  - name: passes
    logs:
      n1: "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.50 GiB. GPU 0"
    expect:
      - rule: my-oom
        facts:
          tried: ["3.50 GiB"]
  - name: fails
    logs:
      n1: "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB. GPU 0"
    expect:
      - rule: my-oom
        severity: warning
        facts:
          tried: ["9 GiB"]
`), 0o644)
	out, _, code := analyzer(t, "rules", "test", dir)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s", code, out)
	}
	for _, want := range []string{"FAIL  " + dir + "/oom.test.yaml: fails", "severity critical, expected warning",
		`expected it to contain "9 GiB"`, "+ my-oom [critical", "1 passed, 1 failed"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
