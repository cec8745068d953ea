package pipeline

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/faultline/faultline/parsers"
)

// An event kept past its call keeps its own Fields unless the caller asked
// for one map reused (Options.ReuseFields): the shipper's and the rule
// tests' offline copies all read the last event's fields when every replay
// reused it.
func TestKeptEventsOwnTheirFields(t *testing.T) {
	p := filepath.Join(t.TempDir(), "vllm.log")
	if err := os.WriteFile(p, []byte("INFO 02-02 18:02:01 worker.py:1] first\nINFO 02-02 18:02:02 launcher.py:10] second\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	keep := func(reuse bool) []string {
		var kept []parsers.Event
		if _, err := ReplayFiles(context.Background(), []File{{Path: p, Node: "n"}}, Options{ReuseFields: reuse}, func(ev *parsers.Event) error {
			kept = append(kept, *ev)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		var files []string
		for _, ev := range kept {
			files = append(files, ev.Fields["file"])
		}
		return files
	}
	if got := keep(false); len(got) != 2 || got[0] != "worker.py" || got[1] != "launcher.py" {
		t.Errorf("kept events' file fields %q, want worker.py, launcher.py", got)
	}
	// Reused: the first event's map is the second's (what the option
	// trades for a map per event).
	if got := keep(true); len(got) != 2 || got[0] != got[1] {
		t.Errorf("with ReuseFields the kept events' fields %q, want one map", got)
	}
}
