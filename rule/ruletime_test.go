package rule

import (
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
	for _, msg := range []string{"zorblax one", "nothing for the rule", "zorblax two", "zorblax three"} {
		e.Observe(&parsers.Event{Record: parsers.Record{Node: "n"}, Source: parsers.SourceOther, Message: msg})
	}
	rt := e.RuleTimes()["timed"]
	// Three lines reach the matcher, each a new fact: three matcher runs and
	// three condition evaluations. The unrelated line reaches nothing.
	if rt.Evaluations != 6 {
		t.Errorf("evaluations = %d, want 6", rt.Evaluations)
	}
	if rt.Total <= 0 || rt.Max <= 0 || rt.Max > rt.Total {
		t.Errorf("total %v, max %v", rt.Total, rt.Max)
	}
	if rt.Slow != 6 {
		t.Errorf("slow = %d, want 6 (every run is over a 1 ns budget)", rt.Slow)
	}
	if len(reports) != 1 || reports[0] != "timed zorblax one" {
		t.Errorf("reports = %q, want one, for the first line", reports)
	}
}
