package rule

import (
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/parsers"
)

// diffDoc is a rule over the built-in fact tried whose only case is
// differential; extra is appended to that case.
func diffDoc(extra string) string {
	return `id: d
cause: cuda-oom
condition: len(tried) > 0
title: 'oom'
summary: 'tried {{ first .tried }}'
cases:
  - severity: warning
    confidence: low
    fits: 'it tried {{ first .tried }}'
    lacks: 'no capacity'
` + extra
}

// A differential case ranks the rule's cause first, then its alternatives
// in order, each with what fits and what lacks, and gives the command that
// tells them apart; lint names a case that lacks either half.
func TestDifferentialCase(t *testing.T) {
	for _, tt := range []struct {
		name, extra, want string
	}{
		{"unknown cause", "    alternatives:\n      - cause: nope\n    tell_apart: x\n", `x.yaml:12:16: unknown cause "nope"`},
		{"own cause", "    alternatives:\n      - cause: cuda-oom\n    tell_apart: x\n", "the rule's own cause is the first of the ranking"},
		{"no tell_apart", "    alternatives:\n      - cause: kv-cache-insufficient\n", "a case with alternatives needs tell_apart"},
		{"tell_apart alone", "    tell_apart: x\n", "tell_apart tells alternatives apart: the case has none"},
		{"unknown field in fits", "    alternatives:\n      - cause: kv-cache-insufficient\n        fits: '{{ .nope }}'\n    tell_apart: x\n", "unknown field .nope"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadFSPack(fstest.MapFS{"x.yaml": {Data: []byte(diffDoc(tt.extra))}}, ".", "d")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("want a problem containing %q, got %v", tt.want, err)
			}
		})
	}

	p, err := LoadFSPack(fstest.MapFS{"x.yaml": {Data: []byte(diffDoc(`    alternatives:
      - cause: kv-cache-insufficient
        fits: 'the cache is small'
        lacks: 'no KV line'
      - cause: ray-oom-killer
    tell_apart: 'nvidia-smi (is {{ first .tried }} more than is free?)'
`))}}, ".", "d")
	if err != nil {
		t.Fatal(err)
	}
	e := NewEngine(p.Rules)
	ev := &parsers.Event{Record: parsers.Record{Node: "n", Text: "x"}, Time: time.Unix(1, 0),
		Message: "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.88 GiB. GPU 3 has a total capacity of 21.96 GiB of which 1.29 GiB is free."}
	var got *finding.Finding
	for _, f := range e.Observe(ev) {
		if f.Rule == "d" {
			got = &f
		}
	}
	if got == nil {
		t.Fatalf("no finding of rule d: %v", e.Findings())
	}
	want := []finding.Alternative{
		{Cause: "cuda-oom", Rank: 1, Fits: "it tried 1.88 GiB", Lacks: "no capacity"},
		{Cause: "kv-cache-insufficient", Rank: 2, Fits: "the cache is small", Lacks: "no KV line"},
		{Cause: "ray-oom-killer", Rank: 3},
	}
	if len(got.Alternatives) != len(want) {
		t.Fatalf("alternatives %+v, want %+v", got.Alternatives, want)
	}
	for i := range want {
		if got.Alternatives[i] != want[i] {
			t.Errorf("alternative %d: %+v, want %+v", i, got.Alternatives[i], want[i])
		}
	}
	if got.TellApart != "nvidia-smi (is 1.88 GiB more than is free?)" {
		t.Errorf("tell_apart %q", got.TellApart)
	}
}
