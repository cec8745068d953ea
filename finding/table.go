package finding

import "slices"

// Table is a finding's NodeFacts as an engineer draws them by hand (the
// ray.nodes() view): one row per node, one column per fact, and a last row,
// Node "", for the values no node owns (a placement request, a cluster's
// GPU total), each with the nodes whose logs state it.
type Table struct {
	Columns []string   `json:"columns"` // fact names, in NodeFacts order
	Rows    []TableRow `json:"rows"`
}

// TableRow is one node's values, a Cell per column.
type TableRow struct {
	Node  string `json:"node"`
	Cells []Cell `json:"cells"`
}

// Cell holds the values of one fact in one row.
type Cell struct {
	Values  []string `json:"values,omitempty"`
	Records []string `json:"records,omitempty"` // the record that stated each value
	SeenOn  []string `json:"seen_on,omitempty"` // in the last row: the nodes whose logs state them
}

// NodeTable pivots f.NodeFacts into a Table; a finding without node facts,
// or whose values no node owns, gives an empty one. Rows follow f.Nodes,
// then nodes only the facts name.
func (f Finding) NodeTable() Table {
	var t Table
	if len(f.NodeFacts) == 0 {
		return t
	}
	col := map[string]int{}
	for _, nf := range f.NodeFacts {
		if _, ok := col[nf.Fact]; !ok {
			col[nf.Fact] = len(t.Columns)
			t.Columns = append(t.Columns, nf.Fact)
		}
	}
	nodes := slices.Clone(f.Nodes)
	for _, nf := range f.NodeFacts {
		if nf.Node != "" && !slices.Contains(nodes, nf.Node) {
			nodes = append(nodes, nf.Node)
		}
	}
	row := map[string]int{}
	for _, n := range nodes {
		row[n] = len(t.Rows)
		t.Rows = append(t.Rows, TableRow{Node: n, Cells: make([]Cell, len(t.Columns))})
	}
	var rest *TableRow
	for _, nf := range f.NodeFacts {
		var c *Cell
		if nf.Node != "" {
			c = &t.Rows[row[nf.Node]].Cells[col[nf.Fact]]
		} else {
			if rest == nil {
				rest = &TableRow{Cells: make([]Cell, len(t.Columns))}
			}
			c = &rest.Cells[col[nf.Fact]]
			for _, n := range nf.SeenOn {
				if !slices.Contains(c.SeenOn, n) {
					c.SeenOn = append(c.SeenOn, n)
				}
			}
		}
		c.Values = append(c.Values, nf.Value)
		c.Records = append(c.Records, nf.RecordID)
	}
	// A node with no value of its own is no row: the facts say nothing
	// about it (its evidence is a value another node owns).
	t.Rows = slices.DeleteFunc(t.Rows, func(r TableRow) bool {
		return !slices.ContainsFunc(r.Cells, func(c Cell) bool { return len(c.Values) > 0 })
	})
	// No node owns any value: a table of one row says nothing the facts
	// do not (a single-node log, a message that names versions).
	if len(t.Rows) == 0 {
		return Table{}
	}
	if rest != nil {
		if len(f.Nodes) <= 1 {
			for i := range rest.Cells {
				rest.Cells[i].SeenOn = nil // whose logs: the only node's
			}
		}
		t.Rows = append(t.Rows, *rest)
	}
	return t
}
