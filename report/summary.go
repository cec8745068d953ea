package report

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/faultline/faultline/finding"
)

// Summary is what a diagnosis read and what it concluded beside its
// findings: the last record of diagnose --json, and the verdict the text
// report gives when no finding is active.
type Summary struct {
	Files   int        `json:"files"`
	Lines   int64      `json:"lines"`
	Records int64      `json:"records"`
	Nodes   []NodeSpan `json:"nodes"`
	// Launches counts the launches seen (all clusters); Outcomes are the
	// ones the engine still keeps, with how far each got.
	Launches int       `json:"launches"`
	Outcomes []Outcome `json:"outcomes"`
	Findings int       `json:"findings"`
	Active   int       `json:"active"`
	Resolved int       `json:"resolved"`
}

// NodeSpan is one node's part of the logs.
type NodeSpan struct {
	Node    string    `json:"node"`
	Records int64     `json:"records"`
	First   time.Time `json:"first,omitzero"`
	Last    time.Time `json:"last,omitzero"`
}

// Outcome is how one launch ended: "ready" (its API server came up),
// "failed" (a failure signal, whatever the cause) or "running" (neither
// yet), with when, on which nodes and its first failure: the engine's
// launch summary, kept in one place (finding.LaunchSummary).
type Outcome = finding.LaunchSummary

// Spans counts events per node with their first and last time, for a
// Summary.
type Spans map[string]*NodeSpan

// Add counts one event of node at t (zero: untimed).
func (s Spans) Add(node string, t time.Time) {
	n := s[node]
	if n == nil {
		n = &NodeSpan{Node: node}
		s[node] = n
	}
	n.Records++
	if t.IsZero() {
		return
	}
	if n.First.IsZero() || t.Before(n.First) {
		n.First = t
	}
	if t.After(n.Last) {
		n.Last = t
	}
}

// List returns the spans by node name.
func (s Spans) List() []NodeSpan {
	out := make([]NodeSpan, 0, len(s))
	for _, n := range s {
		out = append(out, *n)
	}
	slices.SortFunc(out, func(a, b NodeSpan) int { return strings.Compare(a.Node, b.Node) })
	return out
}

// Count fills the finding counts of s from findings.
func (s *Summary) Count(findings []finding.Finding) {
	s.Findings, s.Active, s.Resolved = len(findings), 0, 0
	for _, f := range findings {
		switch f.Status {
		case finding.Active:
			s.Active++
		case finding.Resolved:
			s.Resolved++
		}
	}
}

// SummaryJSON writes s as the closing record of a JSON-lines report,
// {"summary": {...}}: a consumer tells "ran, found nothing" from "did not
// run", and a finding line (which has an "id") from it.
func SummaryJSON(w io.Writer, s Summary) error {
	if s.Nodes == nil {
		s.Nodes = []NodeSpan{}
	}
	if s.Outcomes == nil {
		s.Outcomes = []Outcome{}
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(struct {
		Summary Summary `json:"summary"`
	}{s})
}

// Verdict writes what the report concludes when no finding is active: the
// launch that came up (when, on which nodes), or that no rule saw it fail.
// It is the one place that says so, for diagnose and anything else that
// reports a run.
func Verdict(w io.Writer, s Summary) {
	if s.Active > 0 {
		return
	}
	var ready, failed []Outcome
	for _, o := range s.Outcomes {
		switch o.Outcome {
		case "ready":
			ready = append(ready, o)
		case "failed":
			failed = append(failed, o)
		}
	}
	fmt.Fprintln(w)
	switch {
	case len(ready) > 0:
		o := ready[len(ready)-1]
		when := ""
		switch {
		case !o.Ready.IsZero():
			when = " at " + o.Ready.UTC().Format("2006-01-02 15:04:05 MST")
		case !o.Start.IsZero():
			when = " (started " + o.Start.UTC().Format("2006-01-02 15:04:05 MST") + ")"
		}
		on := o.Nodes
		if len(on) == 0 {
			on = nodeNames(s.Nodes)
		}
		by := ""
		if len(o.ReadyOn) > 0 {
			by = " on " + strings.Join(o.ReadyOn, ", ")
		}
		fmt.Fprintf(w, "Launch %d of cluster %s came up healthy%s: its API server started%s; nodes %s.\n",
			o.Launch, o.Cluster, when, by, strings.Join(on, ", "))
		if s.Resolved > 0 {
			fmt.Fprintf(w, "%d finding(s) of an earlier launch are resolved by it (listed above).\n", s.Resolved)
		}
	case len(failed) > 0:
		o := failed[len(failed)-1]
		fmt.Fprintf(w, "Launch %d of cluster %s failed, but no rule knows the cause. Search the logs (`analyzer ingest` + `analyzer search level:error`), or add a rule (docs/rules.md).\n",
			o.Launch, o.Cluster)
	default:
		fmt.Fprintf(w, "No failure seen, and no sign yet that the launch came up (no API server start in these logs): %s.\n", spans(s.Nodes))
	}
	if len(ready) > 0 || len(failed) > 0 {
		fmt.Fprintf(w, "Logs read: %s.\n", spans(s.Nodes))
	}
}

func nodeNames(ns []NodeSpan) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.Node
	}
	return out
}

// spans says, per node, from when to when its logs go.
func spans(ns []NodeSpan) string {
	parts := make([]string, 0, len(ns))
	for _, n := range ns {
		p := n.Node
		if !n.First.IsZero() {
			p += " " + n.First.UTC().Format("2006-01-02 15:04:05") + " – " + n.Last.UTC().Format("15:04:05") + " UTC"
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		return "no nodes"
	}
	return strings.Join(parts, "; ")
}
