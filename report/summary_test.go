package report

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/finding"
)

// TestVerdict: with no active finding the report says how the launch
// ended, in one place: came up (when, on which nodes), failed for a cause
// no rule knows, or neither yet; with an active finding it says nothing
// (the finding does).
func TestVerdict(t *testing.T) {
	t0 := time.Date(2026, 4, 8, 23, 37, 12, 0, time.UTC)
	nodes := []NodeSpan{{Node: "spark-1", First: t0, Last: t0.Add(time.Minute)}, {Node: "spark-2", First: t0, Last: t0.Add(time.Minute)}}
	for _, c := range []struct {
		name string
		s    Summary
		want []string
	}{
		{"ready", Summary{Nodes: nodes, Outcomes: []Outcome{{Cluster: "dgx", Launch: 1, Start: t0, Outcome: "ready"}}},
			[]string{"Launch 1 of cluster dgx came up healthy (started 2026-04-08 23:37:12 UTC): its API server started; nodes spark-1, spark-2.", "Logs read: spark-1 2026-04-08 23:37:12 – 23:38:12 UTC"}},
		{"ready, told when and where", Summary{Nodes: nodes, Outcomes: []Outcome{{Cluster: "dgx", Launch: 2, Start: t0, Outcome: "ready", Ready: t0.Add(90 * time.Second), ReadyOn: []string{"spark-1"}}}},
			[]string{"Launch 2 of cluster dgx came up healthy at 2026-04-08 23:38:42 UTC: its API server started on spark-1; nodes spark-1, spark-2."}},
		{"relaunched", Summary{Nodes: nodes, Resolved: 1, Outcomes: []Outcome{{Cluster: "dgx", Launch: 1, Outcome: "failed"}, {Cluster: "dgx", Launch: 2, Outcome: "ready"}}},
			[]string{"Launch 2 of cluster dgx came up healthy", "1 finding(s) of an earlier launch are resolved by it"}},
		{"failed, no rule", Summary{Nodes: nodes, Outcomes: []Outcome{{Cluster: "dgx", Launch: 1, Outcome: "failed"}}},
			[]string{"Launch 1 of cluster dgx failed, but no rule knows the cause."}},
		{"running", Summary{Nodes: nodes, Outcomes: []Outcome{{Cluster: "dgx", Launch: 1, Outcome: "running"}}},
			[]string{"No failure seen, and no sign yet that the launch came up", "spark-2 2026-04-08 23:37:12 – 23:38:12 UTC"}},
		{"active finding", Summary{Nodes: nodes, Active: 1, Outcomes: []Outcome{{Cluster: "dgx", Launch: 1, Outcome: "failed"}}}, nil},
	} {
		var b strings.Builder
		Verdict(&b, c.s)
		out := b.String()
		if c.want == nil && out != "" {
			t.Errorf("%s: %q, want nothing", c.name, out)
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: %q lacks %q", c.name, out, w)
			}
		}
	}
}

// TestShownEvidence: a short view keeps the first line of each fact on
// each node, then the earliest others, in time order; all of it when it fits.
func TestShownEvidence(t *testing.T) {
	ev := func(fact, node string, line int) finding.Evidence {
		return finding.Evidence{Fact: fact, Node: node, Line: line}
	}
	all := []finding.Evidence{ev("a", "n1", 1), ev("a", "n1", 2), ev("a", "n1", 3), ev("b", "n1", 4), ev("a", "n2", 5), ev("a", "n2", 6)}
	lines := func(es []finding.Evidence) []int {
		var out []int
		for _, e := range es {
			out = append(out, e.Line)
		}
		return out
	}
	for _, c := range []struct {
		n    int
		want []int
	}{{-1, []int{1, 2, 3, 4, 5, 6}}, {6, []int{1, 2, 3, 4, 5, 6}}, {4, []int{1, 2, 4, 5}}, {2, []int{1, 4}}} {
		if got := lines(ShownEvidence(all, c.n)); !slices.Equal(got, c.want) {
			t.Errorf("ShownEvidence(n=%d) = %v, want %v", c.n, got, c.want)
		}
	}
	t0 := time.Date(2026, 4, 8, 22, 41, 0, 0, time.UTC)
	timed := []finding.Evidence{{Time: t0}, {Time: t0.Add(time.Second)}, {Time: t0.Add(2 * time.Second)}}
	if i := FailurePoint(timed, t0.Add(time.Second)); i != 1 {
		t.Errorf("FailurePoint = %d, want the record at first_seen", i)
	}
	if i := FailurePoint(timed, time.Time{}); i != -1 {
		t.Errorf("FailurePoint without first_seen = %d", i)
	}
}
