package ruletest_test

import (
	"context"
	"io/fs"
	"path"
	"sort"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"

	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/rule"
	"github.com/faultline/faultline/rule/ruletest"
	"github.com/faultline/faultline/rules"
)

// rulesDir is the built-in pack on disk, relative to this package. Fixtures'
// `files:` paths resolve against it, exactly as with `analyzer rules test rules`.
const rulesDir = "../../rules"

// The built-in pack loads without a problem, the embedded copy is the one on
// disk, every rule lives in <id>.yaml, and every cause of the catalog has a rule.
func TestBuiltinPackLints(t *testing.T) {
	rs, err := rule.LoadBuiltin()
	if err != nil {
		t.Fatalf("built-in pack: %v", err)
	}
	disk, err := rule.LoadDir(rulesDir)
	if err != nil {
		t.Fatalf("%s: %v", rulesDir, err)
	}
	if len(disk) != len(rs) {
		t.Errorf("embedded pack has %d rules, %s has %d: rebuild (go:embed) or a file is not embedded", len(rs), rulesDir, len(disk))
	}
	covered := map[string]bool{}
	for _, r := range rs {
		covered[r.Cause] = true
		if want := "rules/" + r.ID + ".yaml"; r.File != want {
			t.Errorf("rule %s is in %s, want %s (one rule per file, named by id)", r.ID, r.File, want)
		}
		if strings.TrimSpace(r.Description) == "" {
			t.Errorf("rule %s has no description", r.ID)
		}
	}
	p, err := rule.LoadBuiltinPack()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range p.CauseIDs() {
		if !covered[c] {
			t.Errorf("cause %s of the catalog has no built-in rule", c)
		}
	}
}

// Every fixture of the built-in pack passes.
func TestBuiltinFixtures(t *testing.T) {
	rs, err := rule.LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	results, err := ruletest.RunFS(context.Background(), rules.FS, ".", rulesDir, rs)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) == 0 {
		t.Fatal("no fixtures found")
	}
	for _, r := range results {
		if !r.Passed() {
			var got []string
			for _, f := range r.Got {
				got = append(got, f.Rule+" ["+string(f.Severity)+", "+string(f.Status)+"]")
			}
			t.Errorf("%s: %s:\n  %s\n  got: %v", r.File, r.Name, strings.Join(r.Failures, "\n  "), got)
		}
	}
}

// Every rule has at least two positive fixture cases (it is expected) and one
// negative (it is listed as absent, or the case expects no findings at or
// below its severity).
func TestEveryRuleHasFixtures(t *testing.T) {
	rs, err := rule.LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	pos, neg := map[string]int{}, map[string]int{}
	entries, err := fs.ReadDir(rules.FS, ".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !rule.IsTestFile(e.Name()) {
			continue
		}
		data, err := fs.ReadFile(rules.FS, path.Join(".", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		var f ruletest.File
		if err := yaml.UnmarshalWithOptions(data, &f, yaml.Strict()); err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		for _, c := range f.Tests {
			seen := map[string]bool{}
			for _, x := range c.Expect {
				if x.Rule != "" && !seen[x.Rule] {
					seen[x.Rule] = true
					pos[x.Rule]++
				}
			}
			for _, a := range c.Absent {
				neg[a]++
			}
			if c.NoFindings {
				for _, r := range rs {
					if r.MaxSeverity().Rank() >= finding.Severity(c.NoFindingsAt).Rank() && !contains(c.Absent, r.ID) {
						neg[r.ID]++
					}
				}
			}
		}
	}
	ids := make([]string, 0, len(rs))
	for _, r := range rs {
		ids = append(ids, r.ID)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if pos[id] < 2 || neg[id] < 1 {
			t.Errorf("rule %s has %d positive and %d negative fixture cases, want >= 2 and >= 1", id, pos[id], neg[id])
		}
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

// Every catalog entry a built-in rule reads names the upstream file and
// function that print its message and the versions that do (lint requires
// both on every entry; this says which rules lean on which sources), and
// every built-in rule reads at least one entry that points to its cause.
func TestBuiltinRulesReadTheirCause(t *testing.T) {
	p, err := rule.LoadBuiltinPack()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range p.Rules {
		found := false
		for _, e := range p.Entries {
			if e.Meaning == rule.MeaningBenign || !contains(e.Causes, r.Cause) {
				continue
			}
			for _, f := range e.FactNames() {
				found = found || contains(r.Facts(), f)
			}
		}
		if !found {
			t.Errorf("%s reads no catalog entry whose causes include %s", r.ID, r.Cause)
		}
	}
}
