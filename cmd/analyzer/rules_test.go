package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"

	"github.com/faultline/faultline/rule"
	"github.com/faultline/faultline/sink"
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
		"../../rule/testdata/bad/bad-expr.yaml:9:",
		"../../rule/testdata/bad/unknown-cause.yaml:2:",
		"../../rule/testdata/bad/syntax.yaml:3:",
		"../../rule/testdata/bad/dup-b.yaml:1:1: duplicate rule id",
		// A severity or confidence typo is an error, never a warning.
		`../../rule/testdata/bad/bad-severity.yaml:10:15: severity "crtical" is not one of critical, warning, info`,
		`../../rule/testdata/bad/bad-severity.yaml:13:15: severity "warn" is not one of critical, warning, info`,
		`../../rule/testdata/bad/bad-severity.yaml:14:17: confidence "hihg" is not one of high, medium, low`,
		"../../rule/testdata/bad/v1.yaml:6:4: rule language v1",
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
		"../../rule/testdata/badcatalog/catalog/demo.yaml:63:14: entry demo.net.refused: demo_word: yields [\"peer2\"], the example gives [\"peer1\"]",
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
title: oom
summary: tried {{ first .tried }}
remediation: lower --gpu-memory-utilization
cases:
  - when: len(tried) > 0
    severity: critical
    confidence: high
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

// userCausePack is a --rules DIR that adds a cause of its own: the cause
// (with its default fix), the catalog entry for the message, a rule naming
// the cause without a remediation of its own, and its fixture.
var userCausePack = map[string]string{
	"causes.yaml": `causes:
  - id: ray-disk-full
    description: The disk under /tmp/ray is full, so Ray cannot spill objects or write logs.
    fix: Free space under /tmp/ray or start Ray with --temp-dir on a bigger disk.
`,
	"catalog/ray-disk.yaml": `project: ray
facts:
  disk_full_pct: {type: number, description: 'how full the disk under /tmp/ray is, in percent'}
messages:
  - id: ray.raylet.disk-over-full
    subsystem: raylet
    printed_by: src/ray/common/file_system_monitor.cc FileSystemMonitor::OverCapacity
    versions: '2.0 -'
    meaning: cause
    causes: [ray-disk-full]
    match: {regex: 'is over (?P<pct>\d+(?:\.\d+)?)% full'}
    facts: {disk_full_pct: $pct}
    example: '[2025-01-01 10:00:00,000 E 1 1] file_system_monitor.cc:116: /tmp/ray/session_latest is over 95.0% full, available space: 1 GB'
    yields: {disk_full_pct: [95]}
`,
	"disk-full.yaml": `id: disk-full
cause: ray-disk-full
title: 'The Ray temp disk is {{ max .disk_full_pct }}% full on {{ join .nodes ", " }}'
summary: 'Ray reports its temp directory over {{ max .disk_full_pct }}% full.'
cases:
  - when: len(disk_full_pct) > 0 && max(disk_full_pct) >= 95
    severity: critical
    confidence: high
  - when: len(disk_full_pct) > 0
    severity: warning
    confidence: medium
`,
	"disk-full.test.yaml": `tests:
  - name: over 95% is critical, with the cause's fix
    logs:
      head: "file_system_monitor.cc:116: /tmp/ray/session_latest is over 97% full, available space: 1 GB"
    expect:
      - rule: disk-full
        cause: ray-disk-full
        severity: critical
        facts: {disk_full_pct: ["97.0"]}
        remediation_contains: ["--temp-dir"]
  - name: a healthy node says nothing
    logs:
      head: "file_system_monitor.cc:116: all fine"
    no_findings: true
`,
}

func writePack(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// A cause defined in --rules DIR works end to end: the pack lints, its
// fixtures and catalog tests pass, and diagnose raises a finding of that
// cause whose remediation is the cause's default fix (numbers compared as
// numbers: the fixture's 97.0 is the log's 97). Without causes.yaml the
// rule's cause is unknown, at its line.
func TestUserCauseEndToEnd(t *testing.T) {
	dir := writePack(t, userCausePack)
	builtin, err := rule.LoadBuiltinPack()
	if err != nil {
		t.Fatal(err)
	}
	causes := fmt.Sprintf("%d causes", len(builtin.Causes)+1) // the built-in ones and the pack's own
	if out, errs, code := analyzer(t, "rules", "lint", dir); code != 0 || !strings.Contains(out, "1 rules OK") || !strings.Contains(out, causes) {
		t.Fatalf("rules lint: exit %d\n%s%s", code, out, errs)
	}
	if out, errs, code := analyzer(t, "rules", "test", dir); code != 0 || !strings.Contains(out, "3 passed, 0 failed") {
		t.Fatalf("rules test: exit %d\n%s%s", code, out, errs)
	}
	log := filepath.Join(t.TempDir(), "head.log")
	os.WriteFile(log, []byte("[2025-01-01 10:00:00,000 E 1 1] file_system_monitor.cc:116: /tmp/ray/session_latest is over 96% full, available space: 1 GB\n"), 0o644)
	fs := diagnoseJSON(t, "--rules", dir, "head="+log)
	if len(fs) != 1 || fs[0].Cause != "ray-disk-full" || fs[0].Severity != "critical" ||
		fs[0].Remediation != "Free space under /tmp/ray or start Ray with --temp-dir on a bigger disk." ||
		fs[0].Title != "The Ray temp disk is 96% full on head" {
		t.Fatalf("diagnose --rules DIR: %+v", fs)
	}

	os.Remove(filepath.Join(dir, "causes.yaml"))
	_, errs, code := analyzer(t, "rules", "lint", dir)
	if code != 1 || !strings.Contains(errs, filepath.Join(dir, "disk-full.yaml")+`:2:8: unknown cause "ray-disk-full"`) ||
		!strings.Contains(errs, filepath.Join(dir, "catalog", "ray-disk.yaml")) {
		t.Fatalf("without causes.yaml: exit %d\n%s", code, errs)
	}
}

// TestRulesAlertmanagerConfig: `analyzer rules alertmanager-config` prints
// Alertmanager's inhibit_rules from the built-in pack's explains: the seed
// story's cause mutes the causes it explains, in the same cluster and
// launch.
func TestRulesAlertmanagerConfig(t *testing.T) {
	var out, errs strings.Builder
	if code := run(t.Context(), []string{"rules", "alertmanager-config"}, strings.NewReader(""), &out, &errs); code != 0 {
		t.Fatalf("exit %d: %s", code, errs.String())
	}
	var cfg struct {
		InhibitRules []sink.InhibitRule `yaml:"inhibit_rules"`
	}
	if err := yaml.Unmarshal([]byte(out.String()), &cfg); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	found := false
	for _, r := range cfg.InhibitRules {
		if slices.Equal(r.SourceMatchers, []string{`alertname="ray-node-ip-mismatch"`}) {
			found = true
			if !slices.Equal(r.TargetMatchers, []string{`alertname=~"collective-timeout|ray-insufficient-gpus"`}) ||
				!slices.Equal(r.Equal, []string{"cluster", "launch_id"}) {
				t.Errorf("ray-node-ip-mismatch inhibits %v on %v", r.TargetMatchers, r.Equal)
			}
		}
	}
	if !found || len(cfg.InhibitRules) < 10 {
		t.Errorf("%d inhibit rules, ray-node-ip-mismatch's among them: %v\n%s", len(cfg.InhibitRules), found, out.String())
	}
	if code := run(t.Context(), []string{"rules", "alertmanager-config", "some/dir"}, strings.NewReader(""), &out, &errs); code == 0 {
		t.Errorf("a DIR argument was accepted")
	}
}
