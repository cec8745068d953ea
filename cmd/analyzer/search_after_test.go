package main

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestSearchAfterPages: search prints the next page's cursor on stderr
// ("next: CURSOR", in --json mode too, stdout keeps only hits), and
// --after CURSOR pages on through every hit exactly once, on the index
// and through a running ui's HTTP API (--server) alike; a bad cursor is a
// usage error (exit 2) that says so.
func TestSearchAfterPages(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if _, errs, code := runCmd(t, "ingest", "-q", "--data-dir", dir, filepath.Join(seed, "failed")); code != 0 {
		t.Fatalf("ingest: exit %d: %s", code, errs)
	}
	all := map[string]bool{}
	out, errs, code := runCmd(t, "search", "--data-dir", dir, "--json", "-n", "1000")
	if code != 0 || strings.Contains(errs, "next:") {
		t.Fatalf("all hits: exit %d, stderr %q", code, errs)
	}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var h struct{ ID string }
		if err := json.Unmarshal([]byte(l), &h); err != nil {
			t.Fatalf("not a hit: %q", l)
		}
		all[h.ID] = true
	}
	if len(all) < 20 {
		t.Fatalf("only %d hits in the seed", len(all))
	}
	next := regexp.MustCompile(`(?m)^next: (\S+)`)
	hitLine := regexp.MustCompile(`^[^\s:]+:[^\s:]+:\d+: `)
	page := func(where []string, jsonOut bool) map[string]int {
		seen := map[string]int{}
		after := ""
		for pages := 0; ; pages++ {
			if pages > len(all) {
				t.Fatalf("%v: more pages than hits", where)
			}
			args := append([]string{"search", "-n", "4"}, where...)
			if jsonOut {
				args = append(args, "--json")
			}
			if after != "" {
				args = append(args, "--after", after)
			}
			out, errs, code := runCmd(t, args...)
			if code != 0 {
				t.Fatalf("%v page %d: exit %d: %s", args, pages, code, errs)
			}
			for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
				if jsonOut {
					var h struct{ ID string }
					if err := json.Unmarshal([]byte(l), &h); err != nil || h.ID == "" {
						t.Fatalf("%v: stdout line %q is not a hit", args, l)
					}
					seen[h.ID]++
				} else if hitLine.MatchString(l) {
					seen[hitLine.FindString(l)]++ // node:file:line: (a message may span lines)
				}
			}
			m := next.FindStringSubmatch(errs)
			if m == nil {
				return seen
			}
			after = m[1]
		}
	}
	check := func(name string, seen map[string]int) {
		if len(seen) != len(all) {
			t.Errorf("%s: %d different hits by cursor, %d in all", name, len(seen), len(all))
		}
		for k, n := range seen {
			if n != 1 || name == "json" && !all[k] {
				t.Errorf("%s: %q seen %d times", name, k, n)
			}
		}
	}
	check("json", page([]string{"--data-dir", dir}, true))
	check("text", page([]string{"--data-dir", dir}, false))

	_, errs, code = runCmd(t, "search", "--data-dir", dir, "--after", "not-a-cursor")
	if code != 2 || !strings.Contains(errs, "cursor") {
		t.Errorf("--after not-a-cursor: exit %d, %q", code, errs)
	}

	url, _, _ := startUI(t, "--data-dir", dir)
	check("json --server", page([]string{"--server", url}, true))
	_, errs, code = runCmd(t, "search", "--server", url, "--after", "not-a-cursor")
	if code != 2 || !strings.Contains(errs, "cursor") {
		t.Errorf("--server --after not-a-cursor: exit %d, %q", code, errs)
	}
}
