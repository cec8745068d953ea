package ruletest_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/faultline/faultline/parsers"
	"github.com/faultline/faultline/pipeline"
	"github.com/faultline/faultline/rule"
	"github.com/faultline/faultline/rule/ruletest"
)

func readDocs(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile("../../docs/rules.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(doc)
}

var yamlBlock = regexp.MustCompile("(?s)```yaml\n(.*?)```")

// docs/rules.md opens with a rule of at most 12 lines that reads built-in
// facts; it lints, and it names the cause of the real /dev/shm case.
func TestDocsOpeningRule(t *testing.T) {
	text := readDocs(t)
	first := yamlBlock.FindStringSubmatchIndex(text)
	if first == nil || strings.Count(text[:first[0]], "\n") > 3 {
		t.Fatal("docs/rules.md does not open with a yaml block")
	}
	src := text[first[2]:first[3]]
	if n := strings.Count(strings.TrimRight(src, "\n"), "\n") + 1; n > 12 {
		t.Errorf("the opening rule has %d lines, want at most 12", n)
	}
	p, err := rule.LoadFSPack(fstest.MapFS{"my-shm-too-small.yaml": {Data: []byte(src)}}, ".", "my-rules")
	if err != nil {
		t.Fatalf("the opening rule does not lint: %v", err)
	}
	e := rule.NewEngine(p.Rules)
	_, err = pipeline.Replay(context.Background(), []pipeline.Input{{Path: "../../testdata/logs/real/03-nccl-shm-docker-64mb-xgboost"}},
		pipeline.Options{Cluster: rule.DefaultCluster}, func(ev *parsers.Event) error {
			e.Observe(ev)
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	fs := e.Findings()
	if len(fs) != 1 || fs[0].Rule != "my-shm-too-small" || fs[0].Severity != "critical" || fs[0].Confidence != "high" {
		t.Errorf("the opening rule on the real shm case: %+v", fs)
	}
}

// The worked example (section 11) is run as written: its four files go
// where the text says, the pack lints, its catalog entry and its fixtures
// pass, so the guide an SRE follows cannot drift from what the engine does.
func TestDocsWorkedExample(t *testing.T) {
	text := readDocs(t)
	start := strings.Index(text, "## 11. Worked example")
	end := strings.Index(text, "## 12.")
	if start < 0 || end < start {
		t.Fatal("docs/rules.md has no section 11 worked example")
	}
	section := text[start:end]
	dir := filepath.Join(t.TempDir(), "my-rules")
	named := regexp.MustCompile("`my-rules/([^`]+)`[^`]*```yaml\n(?s:(.*?))```")
	files := named.FindAllStringSubmatch(section, -1)
	if len(files) != 4 {
		t.Fatalf("section 11 names %d files, want the cause, the catalog entry, the rule and its fixture", len(files))
	}
	for _, f := range files {
		p := filepath.Join(dir, f[1])
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f[2]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p, err := rule.LoadDirPack(dir)
	if err != nil {
		t.Fatalf("the documented pack does not lint: %v", err)
	}
	if ps := ruletest.CheckCatalog(context.Background(), p); len(ps) > 0 {
		t.Errorf("the documented catalog entry fails its test: %v", ps)
	}
	results, err := ruletest.RunDir(context.Background(), dir, p.Rules)
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
