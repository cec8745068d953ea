package pipeline

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultline/faultline/parsers"
)

// A file truncated while it is being replayed is reported (warning and
// Stats.Failed, naming it) instead of ending quietly at its new end.
func TestReplayReportsFileTruncatedUnderIt(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "worker.log")
	var b strings.Builder
	for i := 0; i < 100000; i++ {
		fmt.Fprintf(&b, "2025-01-01 00:00:%02d INFO line %07d of a long log\n", i%60, i)
	}
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var warnings []string
	cut := false
	st, err := ReplayFiles(context.Background(), []File{{Path: p, Node: "spark-1"}}, Options{
		Warn: func(err error) { warnings = append(warnings, err.Error()) },
	}, func(ev *parsers.Event) error {
		if !cut {
			cut = true
			if err := os.Truncate(p, 1000); err != nil {
				t.Fatal(err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) == 0 || !strings.Contains(warnings[0], p) || !strings.Contains(warnings[0], "truncated") {
		t.Fatalf("no warning naming %s as truncated: %q", p, warnings)
	}
	if len(st.Failed) != 1 || !strings.Contains(st.Failed[0].Error(), p) {
		t.Fatalf("Stats.Failed = %v, want the truncated file", st.Failed)
	}
}
