package server

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/lane"
)

// findingCollector exposes the findings as Prometheus series, read from the
// stored findings at scrape time (on a cluster, the cluster's: every
// analyzer gives the same series), so that an alerting rule can select by
// cause and severity and Alertmanager route, group and inhibit:
//
//	faultline_finding_active{cluster,cause,severity,rule} 1 while a finding
//	of that cause is active, 0 once all of them are resolved or retracted
//	faultline_findings_raised_total{cause,severity} findings raised (each
//	finding once, however often it changed)
type findingCollector struct {
	findings func() []finding.Finding
	active   *prometheus.Desc
	raised   *prometheus.Desc
}

func newFindingCollector(findings func() []finding.Finding) *findingCollector {
	return &findingCollector{findings: findings,
		active: prometheus.NewDesc("faultline_finding_active",
			"1 while a finding of this cause, severity and rule is active in the cluster, 0 once they are all resolved or retracted.",
			[]string{"cluster", "cause", "severity", "rule"}, nil),
		raised: prometheus.NewDesc("faultline_findings_raised_total",
			"Findings raised, by cause and severity (each finding counted once, however often it changed).",
			[]string{"cause", "severity"}, nil)}
}

func (c *findingCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.active; ch <- c.raised }

func (c *findingCollector) Collect(ch chan<- prometheus.Metric) {
	type key struct{ cluster, cause, severity, rule string }
	active := map[key]float64{}
	raised := map[[2]string]float64{}
	for _, f := range c.findings() {
		k := key{f.Cluster, f.Cause, string(f.Severity), f.Rule}
		if f.Status == finding.Active {
			active[k] = 1
		} else if _, ok := active[k]; !ok {
			active[k] = 0
		}
		raised[[2]string{f.Cause, string(f.Severity)}]++
	}
	for k, v := range active {
		ch <- prometheus.MustNewConstMetric(c.active, prometheus.GaugeValue, v, k.cluster, k.cause, k.severity, k.rule)
	}
	for k, v := range raised {
		ch <- prometheus.MustNewConstMetric(c.raised, prometheus.CounterValue, v, k[0], k[1])
	}
}

// shippersCollector exposes faultline_node_shippers{cluster,node}: the
// shipper processes found publishing at once under one node name (2 or
// more; no series while each node has its own). Their records read as one
// node's: an alert on it is how a deployment learns that two hosts share
// a --node.
type shippersCollector struct {
	shippers *lane.Shippers
	desc     *prometheus.Desc
}

func newShippersCollector(s *lane.Shippers) *shippersCollector {
	return &shippersCollector{shippers: s, desc: prometheus.NewDesc("faultline_node_shippers",
		"Shipper processes publishing at once under this node name (present only when more than one): their records read as one node's; give each shipper its own --node.",
		[]string{"cluster", "node"}, nil)}
}

func (c *shippersCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *shippersCollector) Collect(ch chan<- prometheus.Metric) {
	for _, cf := range c.shippers.Conflicts() {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(len(cf.Shippers)), cf.Cluster, cf.Node)
	}
}
