package finding

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

func TestParseSeverity(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Severity
		ok   bool
	}{
		{"critical", Critical, true}, {"warning", Warning, true}, {"info", Info, true},
		{"crtical", "", false}, {"warn", "", false}, {"", "", false}, {"Critical", "", false},
	} {
		got, err := ParseSeverity(c.in)
		if got != c.want || (err == nil) != c.ok {
			t.Errorf("ParseSeverity(%q) = %q, %v; want %q, ok %v", c.in, got, err, c.want, c.ok)
		}
	}
	if Critical.Rank() <= Warning.Rank() || Warning.Rank() <= Info.Rank() || Severity("x").Rank() != 0 {
		t.Error("ranks out of order")
	}
}

func TestOrderRootsFirst(t *testing.T) {
	t0 := time.Date(2026, 4, 8, 23, 0, 0, 0, time.UTC)
	all := []Finding{
		{ID: "timeout", Severity: Warning, Status: Active, ExplainedBy: "ip", FirstSeen: t0},
		{ID: "old", Severity: Critical, Status: Resolved, FirstSeen: t0},
		{ID: "oom", Severity: Warning, Status: Active, Confidence: "high", FirstSeen: t0.Add(time.Minute)},
		{ID: "ip", Severity: Critical, Status: Active, Confidence: "low", FirstSeen: t0.Add(2 * time.Minute)},
		{ID: "shm", Severity: Warning, Status: Active, Confidence: "low", FirstSeen: t0},
	}
	var ids []string
	for _, f := range Order(all) {
		ids = append(ids, f.ID)
	}
	// Active before resolved, severity then confidence, each root followed
	// by what it explains.
	if want := []string{"ip", "timeout", "oom", "shm", "old"}; !slices.Equal(ids, want) {
		t.Errorf("Order = %v, want %v", ids, want)
	}
}

func TestNodeTable(t *testing.T) {
	f := Finding{Nodes: []string{"spark-1", "spark-2"}, NodeFacts: []NodeFact{
		{Fact: "requested_node", Value: "192.168.200.12", SeenOn: []string{"spark-1"}, RecordID: "r1"},
		{Fact: "registered_ip", Value: "10.1.230.180", Node: "spark-1", SeenOn: []string{"spark-1"}, RecordID: "r2"},
		{Fact: "registered_ip", Value: "10.1.230.181", Node: "spark-2", SeenOn: []string{"spark-2", "spark-1"}, RecordID: "r3"},
		{Fact: "gpu_total", Value: "2", SeenOn: []string{"spark-1"}, RecordID: "r4"},
		{Fact: "tried_node_ip", Value: "192.168.200.12", Node: "spark-1", RecordID: "r5"},
		{Fact: "tried_node_ip", Value: "192.168.200.13", Node: "spark-2", RecordID: "r6"},
	}}
	tb := f.NodeTable()
	if want := []string{"requested_node", "registered_ip", "gpu_total", "tried_node_ip"}; !slices.Equal(tb.Columns, want) {
		t.Fatalf("columns %v, want %v", tb.Columns, want)
	}
	got := map[string][]string{}
	for _, r := range tb.Rows {
		for i, c := range r.Cells {
			for _, v := range c.Values {
				got[r.Node] = append(got[r.Node], tb.Columns[i]+"="+v)
			}
		}
	}
	want := map[string][]string{
		"spark-1": {"registered_ip=10.1.230.180", "tried_node_ip=192.168.200.12"},
		"spark-2": {"registered_ip=10.1.230.181", "tried_node_ip=192.168.200.13"},
		"":        {"requested_node=192.168.200.12", "gpu_total=2"},
	}
	if len(tb.Rows) != 3 || tb.Rows[2].Node != "" {
		t.Fatalf("rows %+v: want spark-1, spark-2, then the values no node owns", tb.Rows)
	}
	for n, w := range want {
		if !slices.Equal(got[n], w) {
			t.Errorf("row %q: %v, want %v", n, got[n], w)
		}
	}
	if c := tb.Rows[2].Cells[0]; !slices.Equal(c.SeenOn, []string{"spark-1"}) || !slices.Equal(c.Records, []string{"r1"}) {
		t.Errorf("unowned cell %+v: want seen on spark-1, record r1", c)
	}
	if len((Finding{}).NodeTable().Rows) != 0 {
		t.Error("a finding without node facts has rows")
	}
	unowned := Finding{Nodes: []string{"n"}, NodeFacts: []NodeFact{{Fact: "cluster_ray", Value: "2.12.0", SeenOn: []string{"n"}}}}
	if rows := unowned.NodeTable().Rows; len(rows) != 0 {
		t.Errorf("a table of values no node owns: %+v, want none", rows)
	}
}

// Another cluster's findings never change the order of this cluster's: the
// root of each finding is fixed before the sort moves anything.
func TestOrderIgnoresOtherClusters(t *testing.T) {
	t0 := time.Date(2026, 4, 8, 23, 0, 0, 0, time.UTC)
	mine := []Finding{
		{ID: "c", Cluster: "a", Severity: Warning, Status: Active, ExplainedBy: "a", FirstSeen: t0},
		{ID: "a", Cluster: "a", Severity: Critical, Status: Active, FirstSeen: t0.Add(time.Second)},
		{ID: "b", Cluster: "a", Severity: Critical, Status: Active, FirstSeen: t0.Add(time.Second)},
		{ID: "d", Cluster: "a", Severity: Warning, Status: Active, ExplainedBy: "b", FirstSeen: t0},
	}
	ids := func(fs []Finding, cluster string) []string {
		var out []string
		for _, f := range fs {
			if f.Cluster == cluster {
				out = append(out, f.ID)
			}
		}
		return out
	}
	want := ids(Order(slices.Clone(mine)), "a")
	for n := 1; n < 40; n++ {
		all := slices.Clone(mine)
		for i := range n {
			id := fmt.Sprintf("x%02d", i)
			f := Finding{ID: id, Cluster: "other", Severity: Critical, Status: Active, FirstSeen: t0.Add(time.Duration(i%3) * time.Second)}
			if i%2 == 1 {
				f.Severity, f.ExplainedBy = Warning, fmt.Sprintf("x%02d", i-1)
			}
			all = append([]Finding{f}, all...)
		}
		if got := ids(Order(all), "a"); !slices.Equal(got, want) {
			t.Fatalf("with %d findings of another cluster: %v, alone: %v", n, got, want)
		}
	}
}

// A tie (same severity, confidence and first time) does not depend on the
// cluster's name, which every finding ID hashes.
func TestOrderTieIndependentOfCluster(t *testing.T) {
	for _, cluster := range []string{"a", "b", "default", "dgx", "prod-17"} {
		all := []Finding{
			{ID: cluster + "-2", Rule: "zeta", Cluster: cluster, Severity: Critical, Status: Active},
			{ID: cluster + "-1", Rule: "alpha", Cluster: cluster, Severity: Critical, Status: Active},
		}
		if all[0].ID < all[1].ID {
			all[0].ID, all[1].ID = all[1].ID, all[0].ID
		}
		if got := Order(all)[0].Rule; got != "alpha" {
			t.Errorf("cluster %s: first %s", cluster, got)
		}
	}
}

// A chain of explanations (C explained by B, B by A) puts the root first
// whatever order the findings come in: the sort once looked roots up by an
// index that its own swaps had moved.
func TestOrderChainOfExplanations(t *testing.T) {
	at := time.Date(2025, 12, 30, 17, 6, 52, 0, time.UTC)
	base := []Finding{
		{ID: "5396", Cause: "gpu-not-visible", ExplainedBy: "663c"},
		{ID: "daaa", Cause: "cuda-driver-mismatch"},
		{ID: "663c", Cause: "python-import-error", ExplainedBy: "daaa"},
	}
	perms := [][]int{{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}}
	for _, p := range perms {
		var in []Finding
		for _, i := range p {
			f := base[i]
			f.Status, f.Severity, f.Confidence, f.FirstSeen = Active, Critical, "high", at
			in = append(in, f)
		}
		if got := Order(in); got[0].Cause != "cuda-driver-mismatch" {
			t.Errorf("order %v: first %s, want the root cuda-driver-mismatch", p, got[0].Cause)
		}
	}
}
