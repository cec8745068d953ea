package rule

import (
	"time"

	"github.com/faultline/faultline/parsers"
)

// RuleTime is the time one rule's matchers and condition took, summed over
// the events that reached them (the literal prefilter keeps most events
// from any rule).
type RuleTime struct {
	Evaluations int64         // matcher runs and condition evaluations
	Total       time.Duration // time they took (matchers: timed on one event in 16, scaled)
	Max         time.Duration // the slowest single one
	Slow        int64         // how many took longer than the slow budget

	lastReport time.Time
}

// slowReportEvery is how often a rule over its budget is reported again.
const slowReportEvery = time.Minute

// RuleTimes returns, per rule id, the time its matchers and condition took.
func (e *Engine) RuleTimes() map[string]RuleTime {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make(map[string]RuleTime, len(e.times))
	for k, v := range e.times {
		out[k] = *v
	}
	return out
}

// OnSlowRule calls report when one matcher run or condition evaluation of a
// rule takes longer than budget: at once, then at most once a minute per
// rule. report runs with the engine locked and must not call it.
func (e *Engine) OnSlowRule(budget time.Duration, report func(rule string, took time.Duration, ev *parsers.Event)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.slowBudget, e.slowReport = budget, report
}

// timedEvery is how many events' matcher runs one timed event stands for
// (conditions, far rarer, are all timed).
const timedEvery = 16

// timed adds the time since start, standing for weight runs, to rule's
// account and reports whether it was over the slow budget; the caller then
// runs the same work again and hands its time to slow, so that a pause of
// the whole process (a busy CPU, a GC) is not blamed on the rule: a costly
// regex is slow every time.
func (e *Engine) timed(rule string, start time.Time, weight int64) bool {
	took := time.Since(start)
	rt := e.times[rule]
	if rt == nil {
		rt = &RuleTime{}
		e.times[rule] = rt
	}
	rt.Evaluations += weight
	rt.Total += took * time.Duration(weight)
	rt.Max = max(rt.Max, took)
	return e.slowBudget > 0 && took > e.slowBudget
}

// slow counts and reports a rule whose second run on the same event took
// took.
func (e *Engine) slow(rule string, took time.Duration, ev *parsers.Event) {
	if took <= e.slowBudget {
		return
	}
	rt := e.times[rule]
	rt.Slow++
	if now := time.Now(); e.slowReport != nil && now.Sub(rt.lastReport) >= slowReportEvery {
		rt.lastReport = now
		e.slowReport(rule, took, ev)
	}
}
