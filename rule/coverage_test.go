package rule

import (
	"sort"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/faultline/faultline/parsers"
)

// coverCatalog has five entries filling one fact: one whose expression
// drops a value, one limited to a source, one to a level, a field, and one
// that nothing prints.
const coverCatalog = `project: test
facts:
  t_killed: {description: what was killed}
messages:
  - id: test.oom.workers
    subsystem: oom
    printed_by: test
    versions: '1.0'
    meaning: cause
    causes: [ray-oom-killer]
    match: {regex: '(?P<n>\d+) Workers? \(tasks / actors\) killed'}
    facts: {t_killed: 'num(n) > 0 ? n : ""'}
    example: '2 Workers (tasks / actors) killed'
    yields: {t_killed: ['2']}
  - id: test.oom.killed
    subsystem: oom
    printed_by: test
    versions: '1.0'
    meaning: cause
    causes: [ray-oom-killer]
    match: {regex: 'OOM killed (?P<value>\w+)', sources: [ray]}
    facts: {t_killed: $value}
    example: '(raylet) OOM killed raylet'
    yields: {t_killed: [raylet]}
  - id: test.oom.monitor
    subsystem: oom
    printed_by: test
    versions: '1.0'
    meaning: cause
    causes: [ray-oom-killer]
    match: {regex: 'memory monitor (?P<value>\w+)', levels: [error]}
    facts: {t_killed: $value}
    example: 'ERROR memory monitor fired'
    yields: {t_killed: [fired]}
  - id: test.oom.ip
    subsystem: oom
    printed_by: test
    versions: '1.0'
    meaning: benign
    match: {field: ip}
    facts: {t_killed: $0}
    example: '(RayWorkerWrapper pid=1, ip=10.0.0.2) hello'
    yields: {t_killed: [10.0.0.2]}
  - id: test.oom.never
    subsystem: oom
    printed_by: test
    versions: '1.0'
    meaning: cause
    causes: [ray-oom-killer]
    match: {regex: 'never (?P<value>printed)'}
    facts: {t_killed: $value}
    example: 'never printed'
    yields: {t_killed: [printed]}
`

// Coverage counts what the engine would record: a match dropped by an
// expression, or an event excluded by sources or levels, is no hit.
func TestCoverageCountsWhatTheEngineRecords(t *testing.T) {
	p, err := LoadFSPack(fstest.MapFS{
		"catalog/t.yaml": {Data: []byte(coverCatalog)},
		"t.yaml": {Data: []byte(`id: t
cause: ray-oom-killer
title: t
summary: s
remediation: r
cases:
  - when: len(t_killed) > 0
    severity: critical
    confidence: high
`)},
	}, ".", "t")
	if err != nil {
		t.Fatal(err)
	}
	events := []parsers.Event{
		{Source: parsers.SourceRay, Level: parsers.LevelError, Message: "2 Workers (tasks / actors) killed due to memory pressure"},
		{Source: parsers.SourceRay, Message: "0 Workers (tasks / actors) killed due to memory pressure"}, // dropped by the expression
		{Source: parsers.SourceVLLM, Message: "OOM killed worker"},                                       // not a ray event
		{Source: parsers.SourceRay, Message: "OOM killed raylet"},
		{Source: parsers.SourceRay, Level: parsers.LevelInfo, Message: "memory monitor started"}, // not an error
		{Source: parsers.SourceRay, IP: "10.0.0.2", Message: "hello"},
	}
	for i := range events {
		events[i].File, events[i].Line, events[i].Node = "n.log", i+1, "n"
		events[i].Text = events[i].Message
	}
	cov := NewCoverage(p)
	engine := NewEngine(p.Rules)
	for i := range events {
		cov.Observe(&events[i])
		engine.Observe(&events[i])
	}
	// The values coverage saw are exactly the values the engine recorded.
	var covered []string
	for _, e := range cov.Entries() {
		if !strings.HasPrefix(e.Entry, "test.") {
			continue
		}
		for _, l := range e.Lines {
			covered = append(covered, l.Value)
		}
	}
	findings := engine.Findings()
	if len(findings) != 1 {
		t.Fatalf("engine: %d findings, want 1", len(findings))
	}
	recorded := append([]string(nil), findings[0].Facts["t_killed"]...)
	sort.Strings(covered)
	sort.Strings(recorded)
	if strings.Join(covered, ",") != strings.Join(recorded, ",") {
		t.Errorf("coverage saw values %q, the engine recorded %q", covered, recorded)
	}
	tests := []struct {
		entry   string
		hits    int
		dropped int // the regex matched, the entry took no value
		line    int
		value   string
		readBy  string
	}{
		{"test.oom.workers", 1, 1, 1, "2", "t"},
		{"test.oom.killed", 1, 1, 4, "raylet", "t"},
		{"test.oom.monitor", 0, 1, 0, "", "t"},
		{"test.oom.ip", 1, 0, 6, "10.0.0.2", "t"},
		{"test.oom.never", 0, 0, 0, "", "t"},
	}
	byID := map[string]EntryCoverage{}
	for _, e := range cov.Entries() {
		byID[e.Entry] = e
	}
	unhit := map[string]bool{}
	for _, e := range cov.Unhit() {
		unhit[e.Entry] = true
	}
	for _, tt := range tests {
		e, ok := byID[tt.entry]
		if !ok {
			t.Fatalf("no coverage of %s", tt.entry)
		}
		if e.Hits != tt.hits || e.Dropped != tt.dropped {
			t.Errorf("%s: %d hits, %d dropped; want %d, %d", tt.entry, e.Hits, e.Dropped, tt.hits, tt.dropped)
		}
		if tt.hits > 0 && (len(e.Lines) == 0 || e.Lines[0].Line != tt.line || e.Lines[0].Value != tt.value) {
			t.Errorf("%s: lines %+v, want line %d value %q", tt.entry, e.Lines, tt.line, tt.value)
		}
		if unhit[tt.entry] != (tt.hits == 0) {
			t.Errorf("%s: in Unhit() = %v, want %v", tt.entry, unhit[tt.entry], tt.hits == 0)
		}
		if strings.Join(e.ReadBy, ",") != tt.readBy || e.Project != "test" || e.Subsystem != "oom" {
			t.Errorf("%s: read by %v, project %s subsystem %s", tt.entry, e.ReadBy, e.Project, e.Subsystem)
		}
	}
}
