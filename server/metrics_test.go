package server

import (
	"os"
	"strings"
	"testing"

	"github.com/faultline/faultline/parsers"
	"github.com/faultline/faultline/rule"
)

// /metrics has a counter of runtime expression errors per rule: 0 for a
// rule that evaluates fine, the engine's count for one that errs.
func TestRuleErrorMetric(t *testing.T) {
	rs, problems := rule.Parse("r.yaml", append(readBrokenRule(t), []byte(`---
id: fine
cause: cuda-oom
title: t
summary: s
remediation: r
cases:
  - when: len(zorblax_seen) > 5
    severity: critical
    confidence: high
`)...))
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	engine := rule.NewEngine(rs)
	for _, msg := range []string{"zorblax one", "zorblax two", "zorblax three"} {
		engine.Observe(&parsers.Event{Record: parsers.Record{Node: "n"}, Source: parsers.SourceOther, Message: msg})
	}
	families, err := newRegistry(func() []*rule.Engine { return []*rule.Engine{engine} }).Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range families {
		if mf.GetName() != "faultline_rule_errors_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "rule" {
					got[l.GetValue()] = m.GetCounter().GetValue()
				}
			}
		}
	}
	want := map[string]float64{"broken": 3, "fine": 0}
	if len(got) != len(want) || got["broken"] != want["broken"] || got["fine"] != want["fine"] {
		t.Errorf("faultline_rule_errors_total = %v, want %v", got, want)
	}
	// The time each rule took is there by name too: "fine" evaluated its
	// condition on each of the three lines (its matcher runs are timed on
	// one event in 16: none of these three).
	runs, secs := map[string]float64{}, map[string]float64{}
	for _, mf := range families {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				switch mf.GetName() {
				case "faultline_rule_matcher_runs_total":
					runs[l.GetValue()] = m.GetCounter().GetValue()
				case "faultline_rule_evaluation_seconds_total":
					secs[l.GetValue()] = m.GetCounter().GetValue()
				}
			}
		}
	}
	if runs["fine"] != 3 || secs["fine"] <= 0 {
		t.Errorf("rule fine: %v runs in %v s, want 3 runs in > 0 s", runs["fine"], secs["fine"])
	}
}

// serve's /metrics carries the counter for every loaded rule.
func TestServeExposesRuleErrors(t *testing.T) {
	srv := startServer(t, Config{})
	code, body := get(t, "http://"+srv.addrs.HTTP+"/metrics", "")
	for _, want := range []string{`faultline_rule_errors_total{rule="cuda-oom"} 0`, "faultline_index_documents", "go_goroutines"} {
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("GET /metrics = %d, lacks %q", code, want)
		}
	}
}

// readBrokenRule is the shared rule that errs at run time.
func readBrokenRule(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("../testdata/rules/erroring/broken.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return b
}
