package finding

import "sort"

// Order sorts findings root causes first, each followed by the findings it
// explains; active findings come before resolved ones. It sorts all in place
// and returns it.
func Order(all []Finding) []Finding {
	byID := map[string]int{}
	for i, f := range all {
		byID[f.ID] = i
	}
	rootOf := func(f Finding) Finding {
		seen := map[string]bool{}
		for f.ExplainedBy != "" && !seen[f.ID] {
			seen[f.ID] = true
			i, ok := byID[f.ExplainedBy]
			if !ok {
				break
			}
			f = all[i]
		}
		return f
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
		return a.ID < b.ID
	}
	sort.SliceStable(all, func(i, j int) bool {
		ri, rj := rootOf(all[i]), rootOf(all[j])
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
