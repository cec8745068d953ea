package rule

import (
	"slices"
	"strings"

	"github.com/faultline/faultline/finding"
)

// LaunchSummary is one launch as the engine tracks it (verdict.go fills it).
type LaunchSummary = finding.LaunchSummary

// Launches lists the launches the engine knows, by cluster then number (a
// long-running engine that forgets findings keeps only the last few per
// cluster), and per cluster how many it has seen in all.
func (e *Engine) Launches() (kept []LaunchSummary, seen map[string]int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	seen = map[string]int{}
	for name, cs := range e.clusters {
		seen[name] = cs.seq
		kept = append(kept, cs.gone...)
		for _, ls := range cs.launches {
			kept = append(kept, e.summary(name, ls))
		}
	}
	slices.SortFunc(kept, func(a, b LaunchSummary) int {
		if c := strings.Compare(a.Cluster, b.Cluster); c != 0 {
			return c
		}
		return a.Launch - b.Launch
	})
	return kept, seen
}
