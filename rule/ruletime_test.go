package rule

import (
	"fmt"
	"testing"
	"time"

	"github.com/faultline/faultline/parsers"
)

// A rule's matcher runs and condition evaluations are timed and counted by
// rule; one over the slow budget is reported at once and then not again
// within the minute, while every slow run is counted.
func TestRuleTimesAndSlowReport(t *testing.T) {
	rs := mustParse(t, `id: timed
cause: cuda-oom
title: t
summary: s
remediation: r
cases:
  - when: len(seen) > 5
    severity: critical
    confidence: high
`)
	e := NewEngine(rs)
	var reports []string
	e.OnSlowRule(time.Nanosecond, func(id string, took time.Duration, ev *parsers.Event) {
		if took <= time.Nanosecond {
			t.Errorf("reported %v, not over the budget", took)
		}
		reports = append(reports, id+" "+ev.Message)
	})
	// 32 lines, each a new fact: 32 matcher runs, timed on the 16th and
	// the 32nd event (each standing for 16), and 32 condition evaluations,
	// all timed.
	for i := range 32 {
		e.Observe(&parsers.Event{Record: parsers.Record{Node: "n"}, Source: parsers.SourceOther, Message: fmt.Sprintf("zorblax w%d", i)})
	}
	e.Observe(&parsers.Event{Record: parsers.Record{Node: "n"}, Source: parsers.SourceOther, Message: "nothing for the rule"})
	// Conditions are timed by rule, matchers by catalog entry.
	rt, mt := e.RuleTimes()["timed"], e.RuleTimes()["test.zorblax.word"]
	if rt.Evaluations != 32 || mt.Evaluations != 32 {
		t.Errorf("evaluations = %d (rule), %d (entry), want 32 and 32", rt.Evaluations, mt.Evaluations)
	}
	if rt.Total <= 0 || rt.Max <= 0 || mt.Total <= 0 {
		t.Errorf("total %v, max %v, entry total %v", rt.Total, rt.Max, mt.Total)
	}
	if rt.Slow+mt.Slow != 34 {
		t.Errorf("slow = %d + %d, want 34 (every timed run is over a 1 ns budget)", rt.Slow, mt.Slow)
	}
	if len(reports) != 2 || reports[0] != "timed zorblax w0" || reports[1] != "test.zorblax.word zorblax w15" {
		t.Errorf("reports = %q, want the rule's on the first line, the entry's on the 16th", reports)
	}
}
