package server

import (
	"sort"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/faultline/faultline/rule"
)

// newRegistry is the registry /metrics serves: the Go and process
// collectors (web adds its HTTP and index metrics) and the rule engine's.
func newRegistry(engines func() []*rule.Engine) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		newRuleErrorCollector(engines))
	return reg
}

// ruleErrorCollector exposes the engine's runtime expression errors as one
// counter per rule: a rule that errs never fires, and an alert on this
// counter is how a live deployment learns of it. It reads the engine's
// counts at scrape time, so the engine's hot path does not change. On a
// cluster the counts are summed over the partitions' engines running now
// (a partition that moves away takes its counts along: Prometheus sees a
// counter reset).
//
// With them, per rule, the time its matchers and condition took, how often
// they ran and how often one run was over the slow budget: a rule that got
// expensive shows by name.
type ruleErrorCollector struct {
	engines                 func() []*rule.Engine
	desc                    *prometheus.Desc
	seconds, evals, slowRun *prometheus.Desc
}

func newRuleErrorCollector(engines func() []*rule.Engine) *ruleErrorCollector {
	return &ruleErrorCollector{engines: engines, desc: prometheus.NewDesc("faultline_rule_errors_total",
		"Runtime expression errors of a rule (its condition or a ruled_out failed to evaluate; the rule did not fire).",
		[]string{"rule"}, nil),
		seconds: prometheus.NewDesc("faultline_rule_evaluation_seconds_total",
			"Time a rule's matchers and condition took (the literal prefilter keeps most events from any rule).",
			[]string{"rule"}, nil),
		evals: prometheus.NewDesc("faultline_rule_matcher_runs_total",
			"Matcher runs and condition evaluations of a rule (matcher runs are timed on one event in 16 and counted from those).", []string{"rule"}, nil),
		slowRun: prometheus.NewDesc("faultline_rule_slow_evaluations_total",
			"Matcher runs or condition evaluations of a rule that took longer than serve's --rule-budget.",
			[]string{"rule"}, nil)}
}

func (c *ruleErrorCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.desc
	ch <- c.seconds
	ch <- c.evals
	ch <- c.slowRun
}

func (c *ruleErrorCollector) Collect(ch chan<- prometheus.Metric) {
	// Every loaded rule has a series (0 until it errs), so an alert on
	// increase() sees the first error; a rule reloaded away keeps its count.
	counts := map[string]int{}
	times := map[string]rule.RuleTime{}
	for i, e := range c.engines() {
		if i == 0 {
			for _, r := range e.Rules() {
				counts[r.ID] = 0
			}
		}
		for id, st := range e.Errors() {
			counts[id] += st.Count
		}
		for id, t := range e.RuleTimes() {
			sum := times[id]
			sum.Total += t.Total
			sum.Evaluations += t.Evaluations
			sum.Slow += t.Slow
			sum.Max = max(sum.Max, t.Max)
			times[id] = sum
		}
	}
	ids := make([]string, 0, len(counts))
	for id := range counts {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(counts[id]), id)
		t := times[id]
		ch <- prometheus.MustNewConstMetric(c.seconds, prometheus.CounterValue, t.Total.Seconds(), id)
		ch <- prometheus.MustNewConstMetric(c.evals, prometheus.CounterValue, float64(t.Evaluations), id)
		ch <- prometheus.MustNewConstMetric(c.slowRun, prometheus.CounterValue, float64(t.Slow), id)
	}
}
