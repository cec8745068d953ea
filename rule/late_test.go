package rule

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/parsers"
	"github.com/faultline/faultline/pipeline"
)

// storyFiles reads each file of a seed story on its own (as its shipper
// would send it), in file order, and the whole story merged by time (as
// diagnose reads it).
func storyFiles(t *testing.T, story string) (files [][]parsers.Event, merged []parsers.Event) {
	t.Helper()
	dir := filepath.Join("../testdata/logs/seed", story)
	inputs, err := pipeline.ParseArgs([]string{"spark-1=" + dir + "/spark-1", "spark-2=" + dir + "/spark-2"})
	if err != nil {
		t.Fatal(err)
	}
	all, err := pipeline.Expand(inputs, nil)
	if err != nil {
		t.Fatal(err)
	}
	pipeline.SortFiles(all)
	collect := func(fs []pipeline.File) []parsers.Event {
		var out []parsers.Event
		if _, err := pipeline.ReplayFiles(context.Background(), fs, pipeline.Options{Cluster: DefaultCluster}, func(ev *parsers.Event) error {
			c := *ev
			out = append(out, c)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, f := range all {
		files = append(files, collect([]pipeline.File{f}))
	}
	return files, collect(all)
}

// arrival is one order the records of a story may arrive in live.
type arrival struct {
	name  string
	order func(files [][]parsers.Event, merged []parsers.Event) []parsers.Event
}

func nodeFirst(node string) func([][]parsers.Event, []parsers.Event) []parsers.Event {
	return func(_ [][]parsers.Event, merged []parsers.Event) []parsers.Event {
		var first, rest []parsers.Event
		for _, ev := range merged {
			if ev.Node == node {
				first = append(first, ev)
			} else {
				rest = append(rest, ev)
			}
		}
		return append(first, rest...)
	}
}

// lateShipper: node's shipper starts at the time of its record at frac of
// the story; until then only the other node's records arrive, then node's
// backlog at once, then both as they come.
func lateShipper(node string, frac float64) func([][]parsers.Event, []parsers.Event) []parsers.Event {
	return func(_ [][]parsers.Event, merged []parsers.Event) []parsers.Event {
		start := merged[int(frac*float64(len(merged)))].Time
		var out, backlog []parsers.Event
		flushed := false
		for _, ev := range merged {
			if !flushed && !ev.Time.Before(start) {
				out, flushed = append(out, backlog...), true
			}
			if ev.Node == node && !flushed {
				backlog = append(backlog, ev)
				continue
			}
			out = append(out, ev)
		}
		return append(out, backlog[len(backlog)*boolInt(flushed):]...)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// shuffledFiles: every file in its own order, the files interleaved at
// random in runs of up to 40 records (a shipper's batches).
func shuffledFiles(seed uint64) func([][]parsers.Event, []parsers.Event) []parsers.Event {
	return func(files [][]parsers.Event, _ []parsers.Event) []parsers.Event {
		r := rand.New(rand.NewPCG(seed, seed))
		at := make([]int, len(files))
		var out []parsers.Event
		for {
			var open []int
			for i, f := range files {
				if at[i] < len(f) {
					open = append(open, i)
				}
			}
			if len(open) == 0 {
				return out
			}
			i := open[r.IntN(len(open))]
			n := min(1+r.IntN(40), len(files[i])-at[i])
			out = append(out, files[i][at[i]:at[i]+n]...)
			at[i] += n
		}
	}
}

// view is what must not depend on the arrival order: a finding's id,
// rule, launch, status, facts (in order), evidence records and words.
func view(fs []finding.Finding) []string {
	var out []string
	for _, f := range fs {
		var ev []string
		for _, e := range f.Evidence {
			ev = append(ev, e.RecordID)
		}
		out = append(out, fmt.Sprintf("%s %s launch %d %s facts %v evidence %v\n%s\n%s\n%s", f.ID, f.Rule, f.Launch, f.Status,
			f.Facts, ev, f.Title, f.Summary, f.Remediation))
	}
	slices.Sort(out)
	return out
}

// Issue 22 item 7: live equals offline whatever order the records arrive
// in: one node's files first, a shipper started late on a backlog, the
// files of both nodes interleaved at random. Same finding IDs, one per
// cause, same facts, evidence and fix as diagnose's. Fails where a launch
// marker opens a launch when it arrives (records of the launch before it
// go into the wrong one, a late Ray head start splits the launch) and
// facts are listed in the order they arrive.
func TestArrivalOrderDoesNotMatter(t *testing.T) {
	rules, err := LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	arrivals := []arrival{
		{"spark-1 first", nodeFirst("spark-1")},
		{"spark-2 first", nodeFirst("spark-2")},
		{"spark-1's shipper late", lateShipper("spark-1", 0.3)},
		{"spark-2's shipper late", lateShipper("spark-2", 0.5)},
	}
	for seed := range uint64(4) {
		arrivals = append(arrivals, arrival{fmt.Sprintf("files interleaved %d", seed), shuffledFiles(seed)})
	}
	for _, story := range []string{"failed", "both"} {
		files, merged := storyFiles(t, story)
		offline := NewEngine(rules)
		for i := range merged {
			offline.Observe(&merged[i])
		}
		want := view(offline.Findings())
		if len(want) == 0 {
			t.Fatalf("%s: diagnose finds nothing", story)
		}
		for _, a := range arrivals {
			t.Run(story+"/"+a.name, func(t *testing.T) {
				evs := a.order(files, merged)
				if len(evs) != len(merged) {
					t.Fatalf("%d records arrive, %d in the story", len(evs), len(merged))
				}
				live := NewEngine(rules)
				live.ForgetFindings()
				for i, ev := range evs {
					live.ObserveAt(&ev, uint64(i+1)<<20)
				}
				got := view(live.Findings())
				if !slices.Equal(got, want) {
					t.Errorf("live findings\n%s\nwant (diagnose)\n%s", strings.Join(got, "\n\n"), strings.Join(want, "\n\n"))
				}
				causes := map[string]int{}
				for _, f := range live.Findings() {
					causes[f.Cause+"/"+f.LaunchID]++
				}
				for c, n := range causes {
					if n > 1 {
						t.Errorf("cause %s raised %d times in one launch", c, n)
					}
				}
			})
		}
	}
	_ = time.Second
}

var reFixNode = regexp.MustCompile(`on (\S+): VLLM_HOST_IP=(\S+)`)

// No version of the seed's finding, in any arrival order, names a node in
// its fix with an address that is not that node's: a value one node
// mentioned about another (the head's GCS registering the worker) is not
// the mentioning node's. Every version is checked, as the live path would
// publish it without settling.
func TestNoVersionNamesTheWrongNode(t *testing.T) {
	rules, err := LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	files, merged := storyFiles(t, "failed")
	offline := NewEngine(rules)
	for i := range merged {
		offline.Observe(&merged[i])
	}
	truth := map[string]string{} // node -> address
	for _, f := range offline.Findings() {
		for _, m := range reFixNode.FindAllStringSubmatch(f.Remediation, -1) {
			truth[m[1]] = m[2]
		}
	}
	if len(truth) != 2 {
		t.Fatalf("diagnose's fix names %v, want both nodes", truth)
	}
	orders := []arrival{{"merged", func(_ [][]parsers.Event, m []parsers.Event) []parsers.Event { return m }},
		{"spark-1 first", nodeFirst("spark-1")}, {"spark-2 first", nodeFirst("spark-2")},
		{"spark-2's shipper late", lateShipper("spark-2", 0.5)}}
	for seed := range uint64(4) {
		orders = append(orders, arrival{fmt.Sprintf("files interleaved %d", seed), shuffledFiles(seed)})
	}
	for _, a := range orders {
		live := NewEngine(rules)
		for _, ev := range a.order(files, merged) {
			for _, f := range live.Observe(&ev) {
				for _, m := range reFixNode.FindAllStringSubmatch(f.Remediation, -1) {
					if truth[m[1]] != m[2] {
						t.Errorf("%s: version %d of %s says %q; %s is %s", a.name, f.Updates, f.Rule, m[0], m[1], truth[m[1]])
					}
				}
			}
		}
	}
}
