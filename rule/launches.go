package rule

import (
	"slices"
	"time"
)

// LaunchSummary is one launch as the engine tracks it, for reports: its
// number, identity, when its first record was seen and how far it got.
type LaunchSummary struct {
	Cluster string    `json:"cluster"`
	Num     int       `json:"launch"`
	ID      string    `json:"launch_id"`
	Start   time.Time `json:"start,omitzero"`
	// Outcome: "ready" (the API server came up), "failed" (a failure
	// signal was seen), else "running".
	Outcome string `json:"outcome"`
}

// Launches lists the launches the engine keeps (the last few per cluster),
// by cluster then number, and per cluster how many it has seen in all.
func (e *Engine) Launches() (kept []LaunchSummary, seen map[string]int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	seen = map[string]int{}
	for name, cs := range e.clusters {
		seen[name] = cs.seq
		for _, ls := range cs.launches {
			kept = append(kept, LaunchSummary{Cluster: name, Num: ls.num, ID: launchID(name, ls.opener),
				Start: ls.start, Outcome: ls.outcome()})
		}
	}
	slices.SortFunc(kept, func(a, b LaunchSummary) int {
		if a.Cluster != b.Cluster {
			if a.Cluster < b.Cluster {
				return -1
			}
			return 1
		}
		return a.Num - b.Num
	})
	return kept, seen
}
