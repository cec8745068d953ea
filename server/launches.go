package server

import (
	"slices"
	"strings"

	"github.com/faultline/faultline/finding"
)

// launches are the launch summaries of the rule engines running (GET
// /api/launches): each launch once, by cluster then number. In cluster
// mode a member answers for the partitions it holds.
func (s *server) launches() []finding.LaunchSummary {
	out := []finding.LaunchSummary{}
	seen := map[string]bool{}
	for _, e := range s.engines() {
		kept, _ := e.Launches()
		for _, l := range kept {
			if k := l.Cluster + "\x00" + l.LaunchID; !seen[k] {
				seen[k] = true
				out = append(out, l)
			}
		}
	}
	slices.SortFunc(out, func(a, b finding.LaunchSummary) int {
		if c := strings.Compare(a.Cluster, b.Cluster); c != 0 {
			return c
		}
		return a.Launch - b.Launch
	})
	return out
}
