package server

import (
	"sort"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/faultline/faultline/rule"
)

// newRegistry is the registry /metrics serves: the Go and process
// collectors (web adds its HTTP and index metrics) and the rule engine's.
func newRegistry(engine *rule.Engine) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		newRuleErrorCollector(engine))
	return reg
}

// ruleErrorCollector exposes the engine's runtime expression errors as one
// counter per rule: a rule that errs never fires, and an alert on this
// counter is how a live deployment learns of it. It reads the engine's
// counts at scrape time, so the engine's hot path does not change.
type ruleErrorCollector struct {
	engine *rule.Engine
	desc   *prometheus.Desc
}

func newRuleErrorCollector(engine *rule.Engine) *ruleErrorCollector {
	return &ruleErrorCollector{engine: engine, desc: prometheus.NewDesc("faultline_rule_errors_total",
		"Runtime expression errors of a rule (its condition or a ruled_out failed to evaluate; the rule did not fire).",
		[]string{"rule"}, nil)}
}

func (c *ruleErrorCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *ruleErrorCollector) Collect(ch chan<- prometheus.Metric) {
	errs := c.engine.Errors()
	// Every loaded rule has a series (0 until it errs), so an alert on
	// increase() sees the first error; a rule reloaded away keeps its count.
	counts := map[string]int{}
	for _, r := range c.engine.Rules() {
		counts[r.ID] = 0
	}
	for id, st := range errs {
		counts[id] = st.Count
	}
	ids := make([]string, 0, len(counts))
	for id := range counts {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(counts[id]), id)
	}
}
