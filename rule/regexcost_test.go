package rule

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRegexCost(t *testing.T) {
	for _, tc := range []struct {
		re   string
		over bool
	}{
		{`NCCL WARN (?P<value>.*)`, false},
		{`(?P<value>(?:CUDA|HIP) out of memory\.?[^\n]{0,160})`, false},
		{`\b[0-9a-f]{56}\s+(?P<value>\d+\.\d+\.\d+\.\d+)\s+(?:True|False)\s+ALIVE`, false},
		{`placement group of specs.*?specs=(?P<specs>\[.*?\])`, false},
		// Each keeps hundreds of partial matches alive per byte (measured
		// with Go's regexp on a 512 KiB line: 140-290 ms, against < 30 ms
		// for every pattern of the built-in pack).
		{`(\w+\s*){1,500}x`, true},
		{`(?:a|b|c|[0-9]+){1,300}z`, true},
		{`(.*a){20}`, true},
	} {
		c, err := regexCost(tc.re)
		if err != nil {
			t.Fatalf("%s: %v", tc.re, err)
		}
		if got := c > maxRegexCost; got != tc.over {
			t.Errorf("regexCost(%q) = %.0f, over budget %v, want %v", tc.re, c, got, tc.over)
		}
	}
}

// A catalog entry with a costly regex is refused at load (hence by lint
// and by hot reload, which load the same way), naming the file.
func TestCostlyRegexFailsLoad(t *testing.T) {
	dir := t.TempDir()
	catalog := `project: slow
facts:
  words: {description: words}
messages:
  - id: slow.x.words
    subsystem: x
    printed_by: nothing
    versions: '1.0'
    meaning: benign
    match: {regex: '(?P<value>(\w+\s*){1,500}x)'}
    facts: {words: $value}
    example: 'a x'
`
	if err := os.MkdirAll(filepath.Join(dir, "catalog"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "catalog", "slow.yaml"), []byte(catalog), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load([]string{dir}, true)
	if err == nil {
		t.Fatal("a catalog entry with a catastrophic regex loaded")
	}
	for _, want := range []string{"slow.yaml", "budget"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}

// The built-in pack stays under budget with room to spare.
func TestBuiltinRegexCost(t *testing.T) {
	worst, worstRe := 0.0, ""
	p, err := LoadBuiltinPack()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range p.Entries {
		if e.Match.Regex == "" {
			continue
		}
		c, err := regexCost(e.Match.Regex)
		if err != nil {
			t.Fatal(err)
		}
		if c > worst {
			worst, worstRe = c, e.Match.Regex
		}
	}
	if worst > maxRegexCost/2 {
		t.Errorf("the pack's costliest regex (%.0f steps a byte) is within 2x of the budget: %s", worst, worstRe)
	}
	t.Logf("costliest built-in regex: %.0f steps a byte: %s", worst, worstRe)
}
