package ruletest_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/faultline/faultline/rule"
	"github.com/faultline/faultline/rule/ruletest"
)

// The worked example of docs/rules.md (section 9) is run as written: its rule
// lints, and its fixtures pass against the real log they name, so the guide
// an SRE follows cannot drift from what the engine does.
func TestDocsWorkedExample(t *testing.T) {
	doc, err := os.ReadFile("../../docs/rules.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	start := strings.Index(text, "## 9. Worked example")
	end := strings.Index(text, "## 10.")
	if start < 0 || end < start {
		t.Fatal("docs/rules.md has no section 9 worked example")
	}
	blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(text[start:end], -1)
	if len(blocks) != 2 {
		t.Fatalf("section 9 has %d yaml blocks, want the rule and its fixture", len(blocks))
	}
	// The fixture names ../testdata/..., as from a folder beside testdata/.
	root := t.TempDir()
	abs, err := filepath.Abs("../../testdata")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(abs, filepath.Join(root, "testdata")); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "my-rules")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"gloo-loopback.yaml": blocks[0][1], "gloo-loopback.test.yaml": blocks[1][1]} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rs, err := rule.LoadDir(dir)
	if err != nil {
		t.Fatalf("the documented rule does not lint: %v", err)
	}
	results, err := ruletest.RunDir(context.Background(), dir, rs)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 3 {
		t.Fatalf("%d fixture cases ran, want 3", len(results))
	}
	for _, r := range results {
		if !r.Passed() {
			t.Errorf("%s: %s", r.Name, strings.Join(r.Failures, "; "))
		}
	}
}
