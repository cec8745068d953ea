package rule

import (
	"sort"
	"strings"
	"testing"

	"github.com/faultline/faultline/parsers"
)

// Coverage counts what the engine would record: a match dropped by
// value_expr, or an event excluded by sources or levels, is no hit.
func TestCoverageCountsWhatTheEngineRecords(t *testing.T) {
	rs, problems := Parse("t.yaml", []byte(`id: t
cause: ray-oom-killer
severity: critical
title: t
facts:
  killed:
    from:
      - regex: '(?P<n>\d+) Workers? \(tasks / actors\) killed'
        value_expr: 'num(n) > 0 ? n : ""'
      - regex: 'OOM killed (?P<value>\w+)'
        sources: [ray]
      - regex: 'memory monitor (?P<value>\w+)'
        levels: [error]
      - field: ip
      - regex: 'never (?P<value>printed)'
        note: 'Ray 2.9 memory_monitor.cc prints this'
condition: len(killed) > 0
summary: s
remediation: r
`))
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	events := []parsers.Event{
		{Source: parsers.SourceRay, Level: parsers.LevelError, Message: "2 Workers (tasks / actors) killed due to memory pressure"},
		{Source: parsers.SourceRay, Message: "0 Workers (tasks / actors) killed due to memory pressure"}, // dropped by value_expr
		{Source: parsers.SourceVLLM, Message: "OOM killed worker"},                                       // not a ray event
		{Source: parsers.SourceRay, Message: "OOM killed raylet"},
		{Source: parsers.SourceRay, Level: parsers.LevelInfo, Message: "memory monitor started"}, // not an error
		{Source: parsers.SourceRay, IP: "10.0.0.2", Message: "hello"},
	}
	for i := range events {
		events[i].File, events[i].Line, events[i].Node = "n.log", i+1, "n"
		events[i].Text = events[i].Message
	}
	cov := NewCoverage(rs)
	engine := NewEngine(rs)
	for i := range events {
		cov.Observe(&events[i])
		engine.Observe(&events[i])
	}
	// The values coverage saw are exactly the values the engine recorded.
	var covered []string
	for _, m := range cov.Matchers() {
		for _, l := range m.Lines {
			covered = append(covered, l.Value)
		}
	}
	findings := engine.Findings()
	if len(findings) != 1 {
		t.Fatalf("engine: %d findings, want 1", len(findings))
	}
	recorded := append([]string(nil), findings[0].Facts["killed"]...)
	sort.Strings(covered)
	sort.Strings(recorded)
	if strings.Join(covered, ",") != strings.Join(recorded, ",") {
		t.Errorf("coverage saw values %q, the engine recorded %q", covered, recorded)
	}
	tests := []struct {
		index    int
		hits     int
		dropped  int // the regex matched, the matcher took no value
		line     int
		value    string
		unhitNew bool // listed by Unhit(true)
	}{
		{0, 1, 1, 1, "2", false},
		{1, 1, 1, 4, "raylet", false},
		{2, 0, 1, 0, "", true},
		{3, 1, 0, 6, "10.0.0.2", false},
		{4, 0, 0, 0, "", false}, // no hit, but it has a note
	}
	got := cov.Matchers()
	if len(got) != len(tests) {
		t.Fatalf("%d matchers, want %d", len(got), len(tests))
	}
	unhit := map[int]bool{}
	for _, m := range cov.Unhit(true) {
		unhit[m.Index] = true
	}
	for _, tt := range tests {
		m := got[tt.index]
		if m.Rule != "t" || m.Fact != "killed" || m.Index != tt.index {
			t.Errorf("matcher %d is %s/%s[%d]", tt.index, m.Rule, m.Fact, m.Index)
		}
		if m.Hits != tt.hits || m.Dropped != tt.dropped {
			t.Errorf("matcher %d: %d hits, %d dropped; want %d, %d", tt.index, m.Hits, m.Dropped, tt.hits, tt.dropped)
		}
		if tt.hits > 0 && (len(m.Lines) == 0 || m.Lines[0].Line != tt.line || m.Lines[0].Value != tt.value) {
			t.Errorf("matcher %d: lines %+v, want line %d value %q", tt.index, m.Lines, tt.line, tt.value)
		}
		if unhit[tt.index] != tt.unhitNew {
			t.Errorf("matcher %d: in Unhit(true) = %v, want %v", tt.index, unhit[tt.index], tt.unhitNew)
		}
	}
}
