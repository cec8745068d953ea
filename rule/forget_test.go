package rule

import (
	"fmt"
	"testing"

	"github.com/faultline/faultline/finding"
)

// Issue 22 item 8: an engine that forgets findings with their launch holds
// those of the kept launches only, however many were raised, and a launch
// that comes up healthy still resolves the active findings of the launches
// it forgot. Without ForgetFindings (diagnose) every finding stays.
func TestFindingsLeaveWithTheirLaunch(t *testing.T) {
	for _, forget := range []bool{true, false} {
		t.Run(fmt.Sprintf("forget=%v", forget), func(t *testing.T) {
			e := NewEngine(mustParse(t, testRules))
			if forget {
				e.ForgetFindings()
			}
			const launches = 20
			first := ""
			for i := range launches {
				e.Observe(ev("a", i*10, fmt.Sprintf("vLLM API server version 0.%d.0", i)))
				fs := e.Observe(ev("a", i*10+1, fmt.Sprintf("Error while creating shared memory segment /dev/shm/x%d", i)))
				if len(fs) != 1 {
					t.Fatalf("launch %d raised %d findings, want 1", i+1, len(fs))
				}
				if i == 0 {
					first = fs[0].ID
				}
			}
			want := launches
			if forget {
				want = maxLaunchesKept
			}
			if got := len(e.Findings()); got != want {
				t.Errorf("%d findings held after %d launches, want %d", got, launches, want)
			}
			// The next launch comes up healthy: every earlier finding still
			// active is resolved, those of forgotten launches included.
			e.Observe(ev("a", 1000, "vLLM API server version 1.0.0"))
			resolved := map[string]bool{}
			for _, f := range e.Observe(ev("a", 1001, "INFO:     Application startup complete.")) {
				if f.Status == finding.Resolved {
					resolved[f.ID] = true
				}
			}
			// Forgotten launches' findings wait to be resolved up to a bound
			// (maxUnresolved, above 20): all are resolved here.
			if len(resolved) != launches || !resolved[first] {
				t.Errorf("%d findings resolved (the first: %v), want all %d", len(resolved), resolved[first], launches)
			}
		})
	}
}
