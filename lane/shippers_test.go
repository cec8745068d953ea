package lane

import (
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/parsers"
	"github.com/faultline/faultline/transport"
)

func shipperBatch(shipper string, at time.Time, cluster, node string) *transport.Batch {
	return &transport.Batch{Shipper: shipper, Stored: at, Records: []parsers.Record{{ID: "r", Cluster: cluster, Node: node}}}
}

// Two processes publishing under one node name at once are a conflict,
// said once; a shipper restarted (the new process's batches all after
// the old one's) is not, and neither are batches that name no process.
func TestShippersTellTwoProcessesFromARestart(t *testing.T) {
	t0 := time.Date(2026, 4, 8, 22, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	for _, c := range []struct {
		name    string
		batches []*transport.Batch
		want    []string // the conflicts Observe reports, in order: "cluster/node a,b"
	}{
		{"restart", []*transport.Batch{
			shipperBatch("vm:1:aa", at(0), "c", "vm"), shipperBatch("vm:1:aa", at(5), "c", "vm"),
			shipperBatch("vm:2:bb", at(6), "c", "vm"), shipperBatch("vm:2:bb", at(9), "c", "vm"),
			shipperBatch("vm:3:cc", at(10), "c", "vm"),
		}, nil},
		{"two at once", []*transport.Batch{
			shipperBatch("vm:1:aa", at(0), "c", "vm"), shipperBatch("vm:2:bb", at(1), "c", "vm"),
			shipperBatch("vm:1:aa", at(2), "c", "vm"), shipperBatch("vm:2:bb", at(3), "c", "vm"),
			shipperBatch("vm:1:aa", at(4), "c", "vm"),
		}, []string{"c/vm vm:1:aa,vm:2:bb"}},
		{"a third joins", []*transport.Batch{
			shipperBatch("a", at(0), "c", "vm"), shipperBatch("b", at(1), "c", "vm"), shipperBatch("a", at(2), "c", "vm"),
			shipperBatch("c", at(3), "c", "vm"), shipperBatch("b", at(4), "c", "vm"),
		}, []string{"c/vm a,b", "c/vm a,b,c"}},
		{"other names, other clusters", []*transport.Batch{
			shipperBatch("a", at(0), "c", "spark-1"), shipperBatch("b", at(1), "c", "spark-2"),
			shipperBatch("a", at(2), "c", "spark-1"), shipperBatch("b", at(3), "d", "spark-1"), shipperBatch("a", at(4), "c", "spark-1"),
		}, nil},
		{"no identity", []*transport.Batch{
			shipperBatch("", at(0), "c", "vm"), shipperBatch("a", at(1), "c", "vm"), shipperBatch("", at(2), "c", "vm"),
		}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := NewShippers(time.Minute, nil)
			var got []string
			for _, b := range c.batches {
				for _, cf := range s.Observe(b) {
					got = append(got, cf.Cluster+"/"+cf.Node+" "+strings.Join(cf.Shippers, ","))
				}
			}
			if strings.Join(got, "; ") != strings.Join(c.want, "; ") {
				t.Errorf("conflicts %q, want %q", got, c.want)
			}
			if n := len(s.Conflicts()); (n > 0) != (len(c.want) > 0) {
				t.Errorf("Conflicts() = %v after the batches", s.Conflicts())
			}
		})
	}
}

// The findings of a node in conflict carry the note, and keep it once the
// conflict is over (their evidence was read while it lasted); findings of
// other nodes get none. A conflict ends once one process was not seen for
// the window.
func TestShippersNoteTheFindingsOfTheNode(t *testing.T) {
	t0 := time.Date(2026, 4, 8, 22, 0, 0, 0, time.UTC)
	s := NewShippers(time.Minute, nil)
	for i, id := range []string{"vm:1:aa", "vm:2:bb", "vm:1:aa"} {
		s.Observe(shipperBatch(id, t0.Add(time.Duration(i)*time.Second), "c", "vm"))
	}
	fs := []finding.Finding{
		{ID: "f1", Cluster: "c", Nodes: []string{"vm"}},
		{ID: "f2", Cluster: "c", Nodes: []string{"spark-1"}},
		{ID: "f3", Cluster: "d", Nodes: []string{"vm"}},
	}
	s.Annotate(fs)
	if len(fs[0].Notes) != 1 || !strings.Contains(fs[0].Notes[0], "node vm: 2 shipper processes") ||
		!strings.Contains(fs[0].Notes[0], "vm:1:aa, vm:2:bb") || !strings.Contains(fs[0].Notes[0], "--node") {
		t.Errorf("finding of the node: notes %q", fs[0].Notes)
	}
	if len(fs[1].Notes)+len(fs[2].Notes) != 0 {
		t.Errorf("findings of other nodes noted: %q, %q", fs[1].Notes, fs[2].Notes)
	}

	// Only vm:1:aa goes on publishing, past the window.
	s.Observe(shipperBatch("vm:1:aa", t0.Add(2*time.Minute), "c", "vm"))
	if c := s.Conflicts(); len(c) != 0 {
		t.Errorf("conflicts after the window: %v", c)
	}
	again := []finding.Finding{{ID: "f1", Cluster: "c", Nodes: []string{"vm"}}, {ID: "f4", Cluster: "c", Nodes: []string{"vm"}}}
	s.Annotate(again)
	if len(again[0].Notes) != 1 || len(again[1].Notes) != 0 {
		t.Errorf("after the conflict: the noted finding has %q (want its note), a new one %q (want none)", again[0].Notes, again[1].Notes)
	}
}
