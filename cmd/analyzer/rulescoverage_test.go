package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultline/faultline/rule"
)

// rules coverage lists, per matcher, the lines it hits in the folders given
// (and the repository's real corpus), and the matchers that hit nothing with
// their notes; --strict fails on a matcher without hit or note.
func TestRulesCoverage(t *testing.T) {
	dir, logs := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(dir, "cov.yaml"), []byte(`id: cov
cause: cuda-oom
severity: critical
title: t
facts:
  word:
    from:
      - regex: 'zorblax frobnicated (?P<value>\w+)'
      - regex: 'zorblax never (?P<value>\w+)'
        note: 'printed by zorblax 1.2 frob.cc only'
      - regex: 'zorblax silent (?P<value>\w+)'
condition: len(word) > 0
summary: s
remediation: r
`), 0o644)
	os.WriteFile(filepath.Join(logs, "n1.log"), []byte("hello\nzorblax frobnicated widgets\n"), 0o644)

	out, errs, code := analyzer(t, "rules", "coverage", "--rules-only", "--rules", dir, "--json", logs)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	var rep struct {
		Corpus   []string
		Matchers []rule.MatcherCoverage
		Unhit    int
		NoNote   int `json:"unhit_no_note"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(rep.Matchers) != 3 || rep.Unhit != 2 || rep.NoNote != 1 {
		t.Fatalf("got %d matchers, %d unhit, %d without note; want 3, 2, 1\n%s", len(rep.Matchers), rep.Unhit, rep.NoNote, out)
	}
	hit := rep.Matchers[0]
	if hit.Hits != 1 || len(hit.Lines) != 1 || hit.Lines[0].Line != 2 || hit.Lines[0].Value != "widgets" ||
		hit.Lines[0].File != filepath.Join(logs, "n1.log") {
		t.Errorf("matcher 0: %+v, want one hit at n1.log:2 value widgets", hit)
	}
	if !strings.Contains(strings.Join(rep.Corpus, " "), filepath.Join("testdata", "logs", "real")) {
		t.Errorf("corpus %v lacks the repository's real logs", rep.Corpus)
	}

	out, errs, code = analyzer(t, "rules", "coverage", "--rules-only", "--rules", dir, logs)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	for _, want := range []string{
		"cov   word[0]  1     regex zorblax frobnicated",
		filepath.Join(logs, "n1.log") + ":2: zorblax frobnicated widgets",
		"matchers without a hit (2):",
		"note: printed by zorblax 1.2 frob.cc only",
		"cov word[2] regex zorblax silent (?P<value>\\w+)\n      NO NOTE",
		"3 matchers, 1 hit real lines, 2 hit nothing (1 of them without a note)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	if _, _, code := analyzer(t, "rules", "coverage", "--strict", "--rules-only", "--rules", dir, logs); code != 1 {
		t.Errorf("--strict with a matcher lacking hit and note: exit %d, want 1", code)
	}
}
