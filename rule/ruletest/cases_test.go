package ruletest_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sharedSources lists the sources that rightly give more than one case:
// different logs of one thread. Any other source used twice is a copy that
// makes a held-out measurement count a case the pack was tuned on.
var sharedSources = map[string]string{
	"NVIDIA/nccl-tests#293":       "372 is a later comment's all-reduce table, 74 the NCCL_DEBUG start-up of the description",
	"gpustack/gpustack#5181":      "454 is the head's log, 463 the worker container's, pasted apart",
	"vllm-project/vllm-metal#417": "the description's 'Before' (461, the failure) and 'After' (460, healthy) console blocks",
}

// Every real case comes from a source of its own (or one of sharedSources)
// and no two cases hold the same log text: a copy of a case in a later
// batch is not held out.
func TestCasesAreDistinct(t *testing.T) {
	dirs, err := filepath.Glob("../../testdata/logs/real/*/case.json")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no cases: %v", err)
	}
	bySource := map[string][]string{}
	byText := map[string]string{}
	for _, cj := range dirs {
		dir := filepath.Dir(cj)
		name := filepath.Base(dir)
		data, err := os.ReadFile(cj)
		if err != nil {
			t.Fatal(err)
		}
		var meta struct {
			Source string `json:"source"`
		}
		if err := json.Unmarshal(data, &meta); err != nil || meta.Source == "" {
			t.Errorf("%s: no source (%v)", cj, err)
			continue
		}
		bySource[meta.Source] = append(bySource[meta.Source], name)
		logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
		var text strings.Builder
		for _, l := range logs {
			b, err := os.ReadFile(l)
			if err != nil {
				t.Fatal(err)
			}
			text.WriteString(strings.Join(strings.Fields(string(b)), " "))
		}
		if prev, ok := byText[text.String()]; ok {
			t.Errorf("%s holds the same log text as %s", name, prev)
		}
		byText[text.String()] = name
	}
	for src, names := range bySource {
		if len(names) > 1 && sharedSources[src] == "" {
			t.Errorf("source %s gives cases %v: keep one, or list it in sharedSources with why", src, names)
		}
	}
	for src := range sharedSources {
		if len(bySource[src]) < 2 {
			t.Errorf("sharedSources lists %s, which gives %d case(s)", src, len(bySource[src]))
		}
	}
}
