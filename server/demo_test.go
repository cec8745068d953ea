package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/internal/testutil"
)

// TestDemoReplayIsByteForByte: the demo's writer reproduces every seed file
// exactly. The lines once aliased the scanner's buffer, which the scanner
// reuses, so the copy of spark-1's json log lost its first lines and
// repeated others, and the shipper warned "broken json-file record".
func TestDemoReplayIsByteForByte(t *testing.T) {
	for _, node := range []string{"spark-1", "spark-2"} {
		src := filepath.Join(seedDir, node)
		dst := t.TempDir()
		if err := replayNode(context.Background(), src, dst, 0); err != nil {
			t.Fatalf("replay %s: %v", node, err)
		}
		n := 0
		err := filepath.WalkDir(src, func(path string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(src, path)
			want, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			got, err := os.ReadFile(filepath.Join(dst, rel))
			if err != nil {
				return err
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s/%s: replayed copy differs from the seed (%d bytes, want %d); first difference at byte %d",
					node, rel, len(got), len(want), firstDiff(got, want))
			}
			n++
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			t.Fatalf("no seed files under %s", src)
		}
	}
}

// A seed file whose last line has no newline is replayed without one too.
func TestDemoReplayKeepsAMissingLastNewline(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	want := []byte("one\n\ntwo\nthree")
	writeFile(t, filepath.Join(src, "a.log"), string(want))
	if err := replayNode(context.Background(), src, dst, 0); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dst, "a.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("replayed %q, want %q", got, want)
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestDemoMatchesDiagnose runs serve with the demo, as the README's first
// command does: its findings equal diagnose's over the same seed in
// everything but times and evidence counts (confidence and ruled-out causes
// included), and no shipper warns about a broken record.
func TestDemoMatchesDiagnose(t *testing.T) {
	srv := startServer(t, Config{Demo: seedDir, DemoPace: 500 * time.Millisecond})
	want := fullVerdicts(diagnose(t))
	testutil.CheckFor(t, 60*time.Second, 100*time.Millisecond, func() error {
		got := fullVerdicts(getFindings(t, srv.addrs.HTTP))
		if !slices.Equal(got, want) {
			return fmt.Errorf("demo findings\n%s\nwant (diagnose)\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		return nil
	})
	if log := srv.log.String(); strings.Contains(log, "broken") {
		t.Errorf("the demo's shippers found broken records:\n%s", log)
	}
}

// fullVerdicts is what a user reads in a finding, without times, update
// counts and evidence lists (serve's evidence grows as lines arrive). The
// summary is compared as its words in any order: it lists values in the
// order they arrived, and live nodes ship independently, so spark-2's
// address may arrive before spark-1's where diagnose reads them by time.
func fullVerdicts(fs []finding.Finding) []string {
	var out []string
	for _, f := range fs {
		facts := map[string][]string{}
		for k, v := range f.Facts {
			v = slices.Clone(v)
			sort.Strings(v)
			facts[k] = v
		}
		nodes := slices.Clone(f.Nodes)
		sort.Strings(nodes)
		b, _ := json.Marshal(struct {
			Rule, Cause, Severity, Confidence, Title, Summary, Status string
			Nodes                                                     []string
			Facts                                                     map[string][]string
			RuledOut                                                  []finding.RuledOut
		}{f.Rule, f.Cause, string(f.Severity), f.Confidence, f.Title, words(f.Summary), string(f.Status), nodes, facts, f.RuledOut})
		out = append(out, string(b))
	}
	sort.Strings(out)
	return out
}

// A demo folder whose node folders hold no lines still says it is done.
func TestDemoOfEmptyNodesEnds(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"a", "b"} {
		if err := os.MkdirAll(filepath.Join(dir, n), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	srv := startServer(t, Config{Demo: dir, DemoPace: 100 * time.Millisecond})
	testutil.CheckFor(t, 20*time.Second, 50*time.Millisecond, func() error {
		if !strings.Contains(srv.stdout.String(), "replay done: 0 lines from 2 nodes") {
			return fmt.Errorf("no end announced:\n%s", srv.stdout.String())
		}
		return nil
	})
}

// words is s's words without punctuation, sorted.
func words(s string) string {
	w := strings.Fields(strings.Map(func(r rune) rune {
		if strings.ContainsRune(",.;:()", r) {
			return ' '
		}
		return r
	}, s))
	sort.Strings(w)
	return strings.Join(w, " ")
}
