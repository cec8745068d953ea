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
	rs, problems := Parse("r.yaml", []byte(`id: timed
cause: cuda-oom
severity: critical
title: t
facts:
  seen:
    from:
      - regex: 'zorblax (?P<value>\w+)'
condition: len(seen) > 5
summary: s
remediation: r
`))
	if len(problems) > 0 {
		t.Fatal(problems)
	}
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
	rt := e.RuleTimes()["timed"]
	if rt.Evaluations != 64 {
		t.Errorf("evaluations = %d, want 64", rt.Evaluations)
	}
	if rt.Total <= 0 || rt.Max <= 0 {
		t.Errorf("total %v, max %v", rt.Total, rt.Max)
	}
	if rt.Slow != 34 {
		t.Errorf("slow = %d, want 34 (every timed run is over a 1 ns budget)", rt.Slow)
	}
	if len(reports) != 1 || reports[0] != "timed zorblax w0" {
		t.Errorf("reports = %q, want one, for the first line", reports)
	}
}
