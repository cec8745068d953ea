package main

import (
	"strings"
	"testing"
)

// `rules test` of the built-in pack passes from any working directory: its
// fixtures' real logs are found in the checkout, not relative to the
// directory the command runs in.
func TestRulesTestBuiltinFromAnyDirectory(t *testing.T) {
	t.Chdir(t.TempDir())
	out, errs, code := analyzer(t, "rules", "test")
	if code != 0 || !strings.Contains(out, " passed, 0 failed") || strings.Contains(out, "skipped") {
		t.Fatalf("rules test from a temp dir: exit %d\n%s%s", code, out, errs)
	}
}
