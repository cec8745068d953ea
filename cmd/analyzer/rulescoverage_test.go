package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultline/faultline/rule"
)

// covPack is a pack of three catalog entries filling one fact that a rule
// reads: one hit by the log given, two hit by nothing.
const covPack = `id: cov
cause: cuda-oom
title: t
summary: s
remediation: r
cases:
  - when: len(zorb_word) > 0
    severity: critical
    confidence: high
---
project: zorblax
facts:
  zorb_word: {description: a zorblax word}
messages:
  - id: zorblax.frob.frobnicated
    subsystem: frob
    printed_by: frob.cc frob
    versions: '1.2'
    meaning: cause
    causes: [cuda-oom]
    match: {regex: 'zorblax frobnicated (?P<value>\w+)'}
    facts: {zorb_word: $value}
    example: 'zorblax frobnicated gears'
    yields: {zorb_word: [gears]}
  - id: zorblax.frob.never
    subsystem: frob
    printed_by: frob.cc frob
    versions: '1.2'
    meaning: symptom
    match: {regex: 'zorblax never (?P<value>\w+)'}
    facts: {zorb_word: $value}
    example: 'zorblax never seen'
    yields: {zorb_word: [seen]}
  - id: zorblax.idle.silent
    subsystem: idle
    printed_by: idle.cc wait
    versions: '1.2'
    meaning: benign
    match: {regex: 'zorblax silent (?P<value>\w+)'}
    example: 'zorblax silent night'
`

// rules coverage lists, per catalog entry, the lines it hits in the folders
// given (and the repository's real corpus), and the entries that hit
// nothing; --catalog counts them per project and subsystem; --strict fails
// on an entry a rule reads that hits nothing.
func TestRulesCoverage(t *testing.T) {
	dir, logs := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(dir, "cov.yaml"), []byte(covPack), 0o644)
	os.WriteFile(filepath.Join(logs, "n1.log"), []byte("hello\nzorblax frobnicated widgets\n"), 0o644)

	out, errs, code := analyzer(t, "rules", "coverage", "--rules-only", "--rules", dir, "--json", logs)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	var rep struct {
		Corpus  []string
		Entries []rule.EntryCoverage
		Catalog []catalogRow
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	byID := map[string]rule.EntryCoverage{}
	for _, e := range rep.Entries {
		byID[e.Entry] = e
	}
	hit := byID["zorblax.frob.frobnicated"]
	if hit.Hits != 1 || len(hit.Lines) != 1 || hit.Lines[0].Line != 2 || hit.Lines[0].Value != "widgets" ||
		hit.Lines[0].File != filepath.Join(logs, "n1.log") || strings.Join(hit.ReadBy, ",") != "cov" {
		t.Errorf("frobnicated: %+v, want one hit at n1.log:2 value widgets, read by cov", hit)
	}
	if e := byID["zorblax.frob.never"]; e.Hits != 0 {
		t.Errorf("never: %+v, want no hit", e)
	}
	if !strings.Contains(strings.Join(rep.Corpus, " "), filepath.Join("testdata", "logs", "real")) {
		t.Errorf("corpus %v lacks the repository's real logs", rep.Corpus)
	}
	rows := map[string]catalogRow{}
	for _, r := range rep.Catalog {
		rows[r.Project+"/"+r.Subsystem] = r
	}
	for key, want := range map[string]catalogRow{
		"zorblax/frob":  {Project: "zorblax", Subsystem: "frob", Messages: 2, Classified: 2, Benign: 0, Read: 2, Hit: 1},
		"zorblax/idle":  {Project: "zorblax", Subsystem: "idle", Messages: 1, Classified: 0, Benign: 1, Read: 0, Hit: 0},
		"zorblax/(all)": {Project: "zorblax", Subsystem: "(all)", Messages: 3, Classified: 2, Benign: 1, Read: 2, Hit: 1},
	} {
		if got := rows[key]; got != want {
			t.Errorf("catalog row %s = %+v, want %+v", key, got, want)
		}
	}

	out, errs, code = analyzer(t, "rules", "coverage", "--rules-only", "--rules", dir, logs)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	for _, want := range []string{
		"zorblax.frob.frobnicated",
		filepath.Join(logs, "n1.log") + ":2: zorblax frobnicated widgets",
		"zorblax.frob.never regex zorblax never (?P<value>\\w+)\n      " + filepath.Join(dir, "cov.yaml") + ":",
		"read by cov",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	out, _, code = analyzer(t, "rules", "coverage", "--catalog", "--rules-only", "--rules", dir, logs)
	if code != 0 || !strings.Contains(out, "PROJECT") || !strings.Contains(out, "how counted:") {
		t.Errorf("--catalog: exit %d\n%s", code, out)
	}
	for _, want := range []string{"zorblax       frob", "nccl      (all)"} {
		if !strings.Contains(strings.Join(strings.Fields(out), " "), strings.Join(strings.Fields(want), " ")) {
			t.Errorf("--catalog lacks %q:\n%s", want, out)
		}
	}

	if _, _, code := analyzer(t, "rules", "coverage", "--strict", "--rules-only", "--rules", dir, logs); code != 1 {
		t.Errorf("--strict with an entry a rule reads and nothing hits: exit %d, want 1", code)
	}
}
