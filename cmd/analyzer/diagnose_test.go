package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/report"
)

const seed = "../../testdata/logs/seed"

// diagnose runs `analyzer diagnose args...` in-process and returns stdout,
// stderr and the exit code.
func diagnose(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), append([]string{"diagnose"}, args...), nil, &out, &errb)
	return out.String(), errb.String(), code
}

func diagnoseJSON(t *testing.T, args ...string) []finding.Finding {
	t.Helper()
	out, errs, code := diagnose(t, append([]string{"--json"}, args...)...)
	if code != 0 {
		t.Fatalf("diagnose %v: exit %d\n%s", args, code, errs)
	}
	var fs []finding.Finding
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if !strings.HasPrefix(lines[len(lines)-1], `{"summary":`) {
		t.Fatalf("diagnose --json does not end with its summary record: %q", lines[len(lines)-1])
	}
	for _, line := range lines[:len(lines)-1] {
		if line == "" {
			continue
		}
		var f finding.Finding
		if err := json.Unmarshal([]byte(line), &f); err != nil {
			t.Fatalf("bad JSON line %q: %v", line, err)
		}
		fs = append(fs, f)
	}
	return fs
}

func active(fs []finding.Finding, severity finding.Severity) []finding.Finding {
	var out []finding.Finding
	for _, f := range fs {
		if f.Status == "active" && (severity == "" || f.Severity == severity) {
			out = append(out, f)
		}
	}
	return out
}

func TestDiagnoseSeedFailedLaunch(t *testing.T) {
	fs := diagnoseJSON(t, seed+"/failed")
	crit := active(fs, finding.Critical)
	if len(crit) != 1 {
		t.Fatalf("want exactly one critical finding, got %d: %+v", len(crit), fs)
	}
	f := crit[0]
	if f.Rule != "ray-node-ip-mismatch" || f.Cause != "ray-node-ip-mismatch" || f.Confidence != "high" {
		t.Errorf("finding = %s/%s/%s, want ray-node-ip-mismatch with high confidence", f.Rule, f.Cause, f.Confidence)
	}
	if len(fs) == 0 || fs[0].ID != f.ID {
		t.Errorf("the IP mismatch must be the first finding")
	}
	for _, want := range []string{"192.168.200.12", "10.1.230.180 (spark-1)", "10.1.230.181 (spark-2)"} {
		if !strings.Contains(f.Summary, want) {
			t.Errorf("summary lacks %q: %s", want, f.Summary)
		}
	}
	if !contains(f.Facts["requested_node"], "192.168.200.12") || !contains(f.Facts["registered_ip"], "10.1.230.180") {
		t.Errorf("facts = %v", f.Facts)
	}
	// The per-node table: who stated which value. Each node registered its
	// own address and was started with its own --node-ip-address; the
	// placement request and the cluster's GPU total belong to no node.
	type row struct{ fact, value, node string }
	var table []row
	for _, nf := range f.NodeFacts {
		table = append(table, row{nf.Fact, nf.Value, nf.Node})
		if nf.RecordID == "" || len(nf.SeenOn) == 0 {
			t.Errorf("node fact without its record or nodes: %+v", nf)
		}
	}
	for _, want := range []row{
		{"requested_node", "192.168.200.12", ""},
		{"registered_ip", "10.1.230.180", "spark-1"}, {"registered_ip", "10.1.230.181", "spark-2"},
		{"gpu_total", "2", ""},
		{"tried_node_ip", "192.168.200.12", "spark-1"}, {"tried_node_ip", "192.168.200.13", "spark-2"},
	} {
		if !slices.Contains(table, want) {
			t.Errorf("node facts lack %+v: %+v", want, table)
		}
	}
	for _, want := range []string{"VLLM_HOST_IP=10.1.230.180", "VLLM_HOST_IP=10.1.230.181", "--node-ip-address"} {
		if !strings.Contains(f.Remediation, want) {
			t.Errorf("remediation lacks %q: %s", want, f.Remediation)
		}
	}
	nodes := map[string]bool{}
	for _, e := range f.Evidence {
		nodes[e.Node] = true
		if e.File == "" || e.Line <= 0 || e.Text == "" || e.RecordID == "" {
			t.Errorf("incomplete evidence %+v", e)
		}
	}
	if !nodes["spark-1"] || !nodes["spark-2"] {
		t.Errorf("evidence must come from both nodes, got %v", nodes)
	}
	ruledOut := map[string]bool{}
	for _, r := range f.RuledOut {
		ruledOut[r.Cause] = true
		if r.Reason == "" {
			t.Errorf("ruled-out %s has no reason", r.Cause)
		}
	}
	if !ruledOut["gpu-not-visible"] {
		t.Errorf("gpu-not-visible must be ruled out, got %+v", f.RuledOut)
	}
}

func TestDiagnoseSeedFixedLaunch(t *testing.T) {
	fs := diagnoseJSON(t, seed+"/fixed")
	if crit := active(fs, finding.Critical); len(crit) != 0 {
		t.Fatalf("the successful launch must give no critical finding, got %+v", crit)
	}
}

// Both launches in the same files: the failed launch's finding is resolved by
// the later healthy one, and no fact of the first leaks into the second.
func TestDiagnoseSeedBothLaunches(t *testing.T) {
	fs := diagnoseJSON(t, seed+"/both")
	if crit := active(fs, finding.Critical); len(crit) != 0 {
		t.Fatalf("no active critical finding expected after the healthy relaunch, got %+v", crit)
	}
	var resolved []finding.Finding
	for _, f := range fs {
		if f.Status == "resolved" {
			resolved = append(resolved, f)
		}
	}
	if len(resolved) != 1 || resolved[0].Rule != "ray-node-ip-mismatch" || resolved[0].Launch != 1 {
		t.Fatalf("want the launch-1 IP mismatch resolved, got %+v", resolved)
	}
}

func TestDiagnoseHumanOutput(t *testing.T) {
	out, _, code := diagnose(t, "spark-1="+seed+"/failed/spark-1", "spark-2="+seed+"/failed/spark-2")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{
		"== CRITICAL ==", "[CRITICAL] ray-node-ip-mismatch", "Evidence, in time order", "Ruled out:", "Fix:",
		"spark-2:" + seed + "/failed/spark-2/vllm-qwen35-json.log:",
		"gpu-not-visible:",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestDiagnoseFailOn(t *testing.T) {
	if _, _, code := diagnose(t, "--fail-on", "critical", seed+"/failed"); code != 3 {
		t.Errorf("--fail-on critical on the failed launch: exit %d, want 3", code)
	}
	if _, _, code := diagnose(t, "--fail-on", "critical", seed+"/fixed"); code != 0 {
		t.Errorf("--fail-on critical on the healthy launch: exit %d, want 0", code)
	}
	if _, errs, code := diagnose(t, "--fail-on", "fatal", seed+"/fixed"); code != 1 || !strings.Contains(errs, "fatal") {
		t.Errorf("bad --fail-on: exit %d, stderr %q", code, errs)
	}
}

func TestDiagnoseBadInput(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.log")
	os.WriteFile(empty, nil, 0o644)
	binary := filepath.Join(dir, "core.bin")
	os.WriteFile(binary, append([]byte("\x7fELF\x00\x00\x01"), bytes.Repeat([]byte{0, 1, 2, 0xff}, 512)...), 0o644)
	unreadable := filepath.Join(dir, "secret.log")
	os.WriteFile(unreadable, []byte("x\n"), 0o000)

	tests := []struct {
		name     string
		args     []string
		code     int
		inStderr string
	}{
		{"missing path", []string{filepath.Join(dir, "nope")}, 1, "nope"},
		{"no args", nil, 1, "no input"},
		{"empty file", []string{empty}, 1, "no log lines"},
		{"binary file warns and goes on", []string{binary, seed + "/failed"}, 0, "core.bin"},
	}
	if os.Geteuid() != 0 { // root reads anything
		tests = append(tests, struct {
			name     string
			args     []string
			code     int
			inStderr string
		}{"unreadable file warns", []string{unreadable, seed + "/fixed"}, 0, "secret.log"})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errs, code := diagnose(t, tt.args...)
			if code != tt.code || !strings.Contains(errs, tt.inStderr) {
				t.Errorf("exit %d (want %d), stderr %q (want it to mention %q)", code, tt.code, errs, tt.inStderr)
			}
		})
	}
}

// The real cases from public bug reports that issue 2 names.
func TestDiagnoseRealCases(t *testing.T) {
	real := "../../testdata/logs/real/"
	tests := []struct {
		dir   string
		first string // "" = no critical finding
	}{
		{"02-ray-ip-get-ip-mismatch-l4", "ray-node-ip-mismatch"},
		{"24-ray-pg-strict-pack-8gpu-on-1gpu", "ray-insufficient-gpus"},
		{"34-gpu-not-visible-docker-no-gpus-flag", "gpu-not-visible"},
		{"29-healthy-vllm-tp2-single-node-nccl-socket", ""},
		{"../nccl-runs/healthy.log", ""},
	}
	for _, tt := range tests {
		t.Run(tt.dir, func(t *testing.T) {
			fs := diagnoseJSON(t, real+tt.dir)
			crit := active(fs, finding.Critical)
			if tt.first == "" {
				if len(crit) != 0 {
					t.Fatalf("healthy logs raised %+v", crit)
				}
				return
			}
			if len(fs) == 0 || fs[0].Cause != tt.first {
				t.Fatalf("first finding %+v, want cause %s", fs, tt.first)
			}
		})
	}
}

func TestDiagnoseExtraRulesDir(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "disk.yaml"), []byte(`id: ray-disk-full
cause: port-in-use
title: test rule
summary: disk {{ first .full }}% full
remediation: free space
cases:
  - when: len(full) > 0
    severity: warning
    confidence: low
---
project: ray
facts:
  full: {type: number, description: 'how full the disk is, in percent'}
messages:
  - id: ray.raylet.disk-over-full
    subsystem: raylet
    printed_by: src/ray/common/file_system_monitor.cc FileSystemMonitor
    versions: '2.x'
    meaning: cause
    causes: [port-in-use]
    match: {regex: 'is over (?P<value>\d+)% full'}
    facts: {full: $value}
    example: 'file_system_monitor.cc:116: /tmp/ray/session is over 95% full, available space: 1 GB'
    yields: {full: [95]}
`), 0o644)
	os.WriteFile(filepath.Join(dir, "x.log"), []byte("file_system_monitor.cc:116: /tmp/ray/session is over 95% full, available space: 1 GB\n"), 0o644)
	fs := diagnoseJSON(t, "--rules", dir, filepath.Join(dir, "x.log"))
	if len(fs) != 1 || fs[0].Rule != "ray-disk-full" || fs[0].Summary != "disk 95% full" {
		t.Fatalf("--rules DIR not used: %+v", fs)
	}
	os.WriteFile(filepath.Join(dir, "broken.yaml"), []byte("id: [oops\n"), 0o644)
	_, errs, code := diagnose(t, "--rules", dir, filepath.Join(dir, "x.log"))
	if code != 1 || !strings.Contains(errs, "broken.yaml:1:") {
		t.Fatalf("a malformed rule must fail loading naming file:line; exit %d, %q", code, errs)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// `diagnose -` reads a log from standard input (NODE=- names its node).
func TestDiagnoseStdin(t *testing.T) {
	data, err := os.ReadFile("../../testdata/logs/real/64-vllm-v1-concurrent-engines-dist-init-port-race/worker-traceback-tail.log")
	if err != nil {
		t.Fatal(err)
	}
	for _, arg := range []string{"-", "head=-"} {
		var out, errb bytes.Buffer
		code := run(context.Background(), []string{"diagnose", "--json", arg}, bytes.NewReader(data), &out, &errb)
		if code != 0 || !strings.Contains(out.String(), `"cause":"port-in-use"`) {
			t.Fatalf("diagnose %s: exit %d\n%s%s", arg, code, out.String(), errb.String())
		}
		if want := map[string]string{"-": `"nodes":["stdin"]`, "head=-": `"nodes":["head"]`}[arg]; !strings.Contains(out.String(), want) {
			t.Errorf("diagnose %s: want %s in %s", arg, want, out.String())
		}
	}
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"diagnose", "-", "x=-"}, strings.NewReader(""), &out, &errb); code != 1 ||
		!strings.Contains(errb.String(), "standard input) given twice") {
		t.Errorf("stdin twice: exit %d, %s", code, errb.String())
	}
}

// The same file given twice (by another path too) is read once, with a
// warning; --fail-on takes any case.
func TestDiagnoseDuplicateInputsAndFailOnCase(t *testing.T) {
	dir := "../../testdata/logs/real/64-vllm-v1-concurrent-engines-dist-init-port-race"
	out, errs, code := diagnose(t, "--fail-on", "CRITICAL", dir, dir+"/worker-traceback-tail.log", "./"+dir+"/worker-traceback-tail.log")
	if code != 3 {
		t.Fatalf("--fail-on CRITICAL: exit %d\n%s", code, errs)
	}
	if n := strings.Count(errs, "again: read once"); n != 2 {
		t.Errorf("want 2 duplicate warnings, got %d:\n%s", n, errs)
	}
	if !strings.Contains(out, "2 files, 10 lines") {
		t.Errorf("duplicates were read again: %s", strings.SplitN(out, "\n", 2)[0])
	}
}

// A folder of loose files is one node; when its NCCL lines come from
// several hosts, diagnose says how to name the nodes.
func TestDiagnoseHintsNodeNames(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "collected")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for host, ip := range map[string]string{"gpu-a": "10.0.0.1", "gpu-b": "10.0.0.2"} {
		line := host + ":11:11 [0] NCCL INFO Bootstrap : Using eth0:" + ip + "<0>\n"
		if err := os.WriteFile(filepath.Join(dir, host+".log"), []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, errs, code := diagnose(t, dir)
	if code != 0 || !strings.Contains(errs, `read as one node "collected", but their NCCL lines come from 2 hosts (gpu-a, gpu-b)`) ||
		!strings.Contains(errs, "analyzer diagnose gpu-a="+dir+"/<its log>") {
		t.Fatalf("exit %d, no hint:\n%s", code, errs)
	}
	// Named nodes get no hint.
	if _, errs, _ := diagnose(t, "a="+filepath.Join(dir, "gpu-a.log"), "b="+filepath.Join(dir, "gpu-b.log")); strings.Contains(errs, "hint:") {
		t.Errorf("hint with named nodes: %s", errs)
	}
}

// TestDiagnoseJSONEndsWithASummary: --json ends with one summary record,
// found nothing or not, so that "ran, found nothing" reads apart from "did
// not run" (with no finding it printed nothing at all).
func TestDiagnoseJSONEndsWithASummary(t *testing.T) {
	for _, c := range []struct {
		dir                               string
		files, findings, active, launches int
		outcome                           string
	}{
		{"failed", 7, 1, 1, 1, "failed"},
		{"fixed", 7, 0, 0, 1, "ready"},
		{"both", 12, 1, 0, 2, "ready"},
	} {
		out, _, code := diagnose(t, "--json", seed+"/"+c.dir)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		var last struct {
			Summary *report.Summary `json:"summary"`
		}
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil || last.Summary == nil || code != 0 {
			t.Fatalf("%s: exit %d, last line %q (%v)", c.dir, code, lines[len(lines)-1], err)
		}
		s := last.Summary
		if s.Files != c.files || s.Lines == 0 || s.Records == 0 || len(s.Nodes) != 2 || s.Findings != c.findings ||
			s.Active != c.active || s.Launches != c.launches || len(lines) != c.findings+1 {
			t.Errorf("%s: summary %+v after %d lines", c.dir, *s, len(lines))
		}
		if n := len(s.Outcomes); n == 0 || s.Outcomes[n-1].Outcome != c.outcome {
			t.Errorf("%s: outcomes %+v, want the last %s", c.dir, s.Outcomes, c.outcome)
		}
	}
}

// TestDiagnoseReportReadsFixFirst: the report says what failed and the fix
// before the evidence (the fix was at line 36 of 43), then the facts per
// node, the launch per node in time with the failure marked, then a
// shortened evidence list that says how to see all of it.
func TestDiagnoseReportReadsFixFirst(t *testing.T) {
	out, _, code := diagnose(t, seed+"/failed")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	lines := strings.Split(out, "\n")
	at := func(prefix string) int {
		for i, l := range lines {
			if strings.HasPrefix(strings.TrimSpace(l), prefix) {
				return i
			}
		}
		t.Fatalf("no line %q:\n%s", prefix, out)
		return -1
	}
	what, fix, table, timeline, ev, ruled := at("What happened:"), at("Fix:"), at("Per node:"), at("Timeline (UTC), per node:"), at("Evidence"), at("Ruled out:")
	if !(what < fix && fix < table && table < timeline && timeline < ev && ev < ruled) || fix > 10 {
		t.Errorf("sections at lines what %d, fix %d, per node %d, timeline %d, evidence %d, ruled out %d: want that order, the fix within 10 lines", what, fix, table, timeline, ev, ruled)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^\s+node\s+requested node\s+registered ip\s+gpu total\s+tried node ip$`),
		regexp.MustCompile(`(?m)^\s+spark-1\s+-\s+10\.1\.230\.180\s+-\s+192\.168\.200\.12$`),
		regexp.MustCompile(`(?m)^\s+spark-2\s+-\s+10\.1\.230\.181\s+-\s+192\.168\.200\.13$`),
		regexp.MustCompile(`(?m)^\s+spark-1  22:41:05 tried node ip 192\.168\.200\.12 → 22:41:07 registered ip 10\.1\.230\.180 → 22:41:25 gpu total 2 → ✗ 22:41:47 requested node 192\.168\.200\.12$`),
		regexp.MustCompile(`(?m)^\s+spark-2  22:41:16 tried node ip 192\.168\.200\.13 → 22:41:18 registered ip 10\.1\.230\.181$`),
		regexp.MustCompile(`Evidence, in time order \(8 of 14 lines; --evidence all shows every one\)`),
		regexp.MustCompile(`(?m)^\s+✗ 22:41:47\.932\s+spark-1:\S+/monitor\.log:18$`),
	} {
		if !want.MatchString(out) {
			t.Errorf("report lacks %s:\n%s", want, out)
		}
	}
	all, _, _ := diagnose(t, "--evidence", "all", seed+"/failed")
	if strings.Count(all, seed+"/failed/") != 14 || !strings.Contains(all, "Evidence, in time order:") {
		t.Errorf("--evidence all shows %d evidence lines, want 14", strings.Count(all, seed+"/failed/"))
	}
	if _, errs, code := diagnose(t, "--evidence", "0", seed+"/failed"); code != 1 || !strings.Contains(errs, "--evidence") {
		t.Errorf("--evidence 0: exit %d %q", code, errs)
	}
}

// TestDiagnoseFixOption2SaysWhatDiffers: the seed's second option does
// not read like the ray start --node-ip-address already tried: it starts
// with what differs from it.
func TestDiagnoseFixOption2SaysWhatDiffers(t *testing.T) {
	f := active(diagnoseJSON(t, seed+"/failed"), finding.Critical)[0]
	var opt2 string
	for _, l := range strings.Split(f.Remediation, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "- or ") {
			opt2 = l
		}
	}
	differs := strings.Index(opt2, "more than the --node-ip-address already tried")
	if differs < 0 || differs > strings.Index(opt2, "ray stop --force") || strings.Index(opt2, "ray stop --force") > strings.Index(opt2, "ray start") {
		t.Errorf("option 2 does not start with what differs from what was tried:\n%s", opt2)
	}
}

// TestDiagnoseHealthyLaunchSaysItCameUp: a launch that came up says so,
// with when and on which nodes ("No known cause found" read as an
// unexplained failure).
func TestDiagnoseHealthyLaunchSaysItCameUp(t *testing.T) {
	out, _, code := diagnose(t, seed+"/fixed")
	if code != 0 || strings.Contains(out, "No known cause") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	want := regexp.MustCompile(`Launch 1 of cluster default came up healthy at 2026-04-08 23:48:06 UTC: its API server started on spark-1; nodes spark-1, spark-2\.`)
	if !want.MatchString(out) || !strings.Contains(out, "Logs read: spark-1 2026-04-08 23:37:") {
		t.Errorf("report lacks %s:\n%s", want, out)
	}
}
