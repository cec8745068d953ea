package rule

import (
	"slices"

	"github.com/faultline/faultline/finding"
)

// nodeFacts lists the values of the named facts with the node each belongs
// to, in the order of names then of the values: the per-node table of a
// finding (finding.NodeFact). state returns a fact's state in the launch.
func nodeFacts(names []string, state func(name string) *factState) []finding.NodeFact {
	var out []finding.NodeFact
	for _, name := range names {
		fs := state(name)
		if fs == nil {
			continue
		}
		for _, v := range fs.values {
			vi := fs.info[v]
			nf := finding.NodeFact{Fact: name, Value: v, Node: vi.owner, SeenOn: slices.Clone(vi.nodes)}
			if len(vi.evidence) > 0 {
				nf.RecordID = vi.evidence[0].RecordID
			}
			out = append(out, nf)
		}
	}
	return out
}
