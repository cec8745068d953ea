package finding

import (
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
