package finding

import "sort"

// Order sorts findings root causes first, each followed by the findings it
// explains; active findings come before resolved ones. It sorts all in place
// and returns it.
func Order(all []Finding) []Finding {
	byID := make(map[string]Finding, len(all))
	for _, f := range all {
		byID[f.ID] = f
	}
	// Each finding's root is found before sorting: looking it up by position
	// while the sort moves elements gave an order that depended on what else
	// was in the slice (another cluster's findings changed this one's).
	root := make(map[string]Finding, len(all))
	for _, f := range all {
		r, seen := f, map[string]bool{}
		for r.ExplainedBy != "" && !seen[r.ID] {
			seen[r.ID] = true
			next, ok := byID[r.ExplainedBy]
			if !ok {
				break
			}
			r = next
		}
		root[f.ID] = r
	}
	less := func(a, b Finding) bool {
		if (a.Status == Active) != (b.Status == Active) {
			return a.Status == Active
		}
		if ra, rb := a.Severity.Rank(), b.Severity.Rank(); ra != rb {
			return ra > rb
		}
		if ca, cb := ConfidenceRank(a.Confidence), ConfidenceRank(b.Confidence); ca != cb {
			return ca > cb
		}
		if !a.FirstSeen.Equal(b.FirstSeen) {
			return a.FirstSeen.Before(b.FirstSeen)
		}
		// IDs hash the cluster's name: a tie broken by them alone would
		// make the first finding depend on what the cluster is called.
		if a.Rule != b.Rule {
			return a.Rule < b.Rule
		}
		return a.ID < b.ID
	}
	sort.SliceStable(all, func(i, j int) bool {
		ri, rj := root[all[i].ID], root[all[j].ID]
		if ri.ID != rj.ID {
			return less(ri, rj)
		}
		// Same group: the root first, then its consequences.
		if (all[i].ID == ri.ID) != (all[j].ID == rj.ID) {
			return all[i].ID == ri.ID
		}
		return less(all[i], all[j])
	})
	return all
}

// ConfidenceRank orders confidences: high 3, medium 2, low 1, unknown 0.
func ConfidenceRank(c string) int {
	switch c {
	case "high":
		return 3
	case "medium":
		return 2
	case "low":
		return 1
	}
	return 0
}
