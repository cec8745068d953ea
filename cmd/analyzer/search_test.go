package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/index"
)

func runCmd(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, nil, &out, &errb)
	return out.String(), errb.String(), code
}

// TestIngestTwiceThenSearch: ingest indexes the seed and stores its
// findings; a second ingest of the same files changes nothing; search
// answers with the documented flags and JSON fields.
func TestIngestTwiceThenSearch(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	seed := filepath.Join("..", "..", "testdata", "logs", "seed", "failed")
	var first string
	for i := 0; i < 2; i++ {
		out, errs, code := runCmd(t, "ingest", "--data-dir", dir, seed)
		if code != 0 {
			t.Fatalf("ingest exit %d: %s", code, errs)
		}
		m := regexp.MustCompile(`Index holds (\d+) events; (\d+) finding`).FindStringSubmatch(out)
		if m == nil || m[1] == "0" || m[2] == "0" {
			t.Fatalf("ingest summary: %q", out)
		}
		// The summary's count is the index's, as it reads once reopened.
		x, err := index.Open(dir, index.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		n, err := x.DocCount()
		x.Close()
		if err != nil || strconv.FormatUint(n, 10) != m[1] {
			t.Errorf("ingest %d says %s events; the index reopened holds %d (%v)", i+1, m[1], n, err)
		}
		if i == 0 {
			first = m[0]
		} else if m[0] != first {
			t.Errorf("second ingest of the same files: %q, first: %q", m[0], first)
		}
	}

	out, errs, code := runCmd(t, "search", "--data-dir", dir, "--json", "-n", "100", "192.168.200.12")
	if code != 0 {
		t.Fatalf("search exit %d: %s", code, errs)
	}
	nodes := map[string]bool{}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for _, l := range lines {
		var h map[string]any
		if err := json.Unmarshal([]byte(l), &h); err != nil {
			t.Fatalf("not JSON: %q", l)
		}
		for _, k := range []string{"id", "time", "node", "container", "file", "line", "source", "level", "message"} {
			if _, ok := h[k]; !ok {
				t.Errorf("hit lacks %q: %s", k, l)
			}
		}
		nodes[h["node"].(string)] = true
		if !strings.Contains(h["message"].(string), "192.168.200.12") {
			t.Errorf("hit without the IP: %s", l)
		}
	}
	if !nodes["spark-1"] || !nodes["spark-2"] {
		t.Errorf("hits from %v, want both nodes", nodes)
	}

	out, _, _ = runCmd(t, "search", "--data-dir", dir, "--json", "--node", "spark-2", "192.168.200.12")
	if n := strings.Count(out, "\n"); n == 0 || strings.Contains(out, `"node":"spark-1"`) {
		t.Errorf("--node spark-2: %q", out)
	}

	out, _, _ = runCmd(t, "search", "--data-dir", dir, "-n", "1", "-C", "2", "--level", "error", "Cannot provide a placement group")
	if got := strings.Count(out, "\n"); got < 3 || !strings.Contains(out, ".log:") {
		t.Errorf("-C 2 printed %d lines: %q", got, out)
	}

	out, _, _ = runCmd(t, "search", "--data-dir", dir, "--facets", "-n", "0", "node:192.168.200.12")
	if !regexp.MustCompile(`(?m)^node: spark-1=\d+`).MatchString(out) || !strings.Contains(out, "level:") {
		t.Errorf("--facets: %q", out)
	}

	out, _, _ = runCmd(t, "search", "--data-dir", dir, "--json", "--since", "2026-04-08T23:24:00Z", "--until", "2026-04-08T23:25:00Z", "-n", "500")
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.Contains(l, `"time":"2026-04-08T23:24:`) {
			t.Errorf("--since/--until let through %s", l)
		}
	}

	// Exit status as grep's: 1 nothing matched (and nothing said), 2 errors.
	if out, errs, code := runCmd(t, "search", "--data-dir", dir, "no-such-word-anywhere"); code != 1 || out != "" || !strings.HasPrefix(errs, "0 of 0 hits") {
		t.Errorf("search without a match: exit %d, stdout %q, stderr %q; want 1, nothing, the count", code, out, errs)
	}
	if out, _, code := runCmd(t, "search", "--data-dir", dir, "--json", "no-such-word-anywhere"); code != 1 || out != "" {
		t.Errorf("search --json without a match: exit %d, stdout %q; want 1 and nothing", code, out)
	}
	if _, _, code := runCmd(t, "search", "--data-dir", dir, "-n", "1", "192.168.200.12"); code != 0 {
		t.Errorf("search with a match: exit %d, want 0", code)
	}
	if _, errs, code := runCmd(t, "search", "--data-dir", filepath.Join(dir, "none"), "x"); code != 2 || !strings.Contains(errs, "no index there") {
		t.Errorf("search of a missing index: exit %d (%s), want 2", code, errs)
	}
	if _, _, code := runCmd(t, "search", "--data-dir", dir, "pid:abc"); code != 2 {
		t.Errorf("bad query: exit %d, want 2", code)
	}
}

// TestFindingLine: the ingest summary names the nodes once, whether or
// not the rule's title names them, and marks a resolved finding.
func TestFindingLine(t *testing.T) {
	for _, c := range []struct {
		f    finding.Finding
		want string
	}{
		{finding.Finding{Severity: "critical", Title: "CUDA out of memory on GPU 0 (spark-1, spark-2)", Nodes: []string{"spark-1", "spark-2"}},
			"[critical] CUDA out of memory on GPU 0 (spark-1, spark-2)"},
		{finding.Finding{Severity: "critical", Title: "Placement request names node:192.168.200.12", Nodes: []string{"spark-1", "spark-2"}},
			"[critical] Placement request names node:192.168.200.12 (spark-1, spark-2)"},
		{finding.Finding{Severity: "warning", Title: "NCCL falls back to TCP on spark-1", Nodes: []string{"spark-1", "spark-2"}},
			"[warning] NCCL falls back to TCP on spark-1 (spark-1, spark-2)"},
		{finding.Finding{Severity: "critical", Title: "Placement request names node:192.168.200.12", Nodes: []string{"spark-1"}, Status: "resolved"},
			"RESOLVED [critical] Placement request names node:192.168.200.12 (spark-1)"},
	} {
		if got := findingLine(c.f); got != c.want {
			t.Errorf("findingLine: %q, want %q", got, c.want)
		}
	}
}

// TestIngestShowsResolved: the seed's two launches (the failed one, then
// one that came up) end with the finding resolved, and ingest's summary
// says so as diagnose does (it listed it like an active one).
func TestIngestShowsResolved(t *testing.T) {
	out, errs, code := runCmd(t, "ingest", "-q", "--data-dir", filepath.Join(t.TempDir(), "data"), filepath.Join(seed, "both"))
	if code != 0 {
		t.Fatalf("ingest: exit %d: %s", code, errs)
	}
	if !regexp.MustCompile(`(?m)^  RESOLVED \[critical\] Placement request names node:192\.168\.200\.12`).MatchString(out) {
		t.Errorf("ingest summary does not show the resolved finding as resolved:\n%s", out)
	}
}
