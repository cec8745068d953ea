package rule

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/parsers"
	"github.com/faultline/faultline/pipeline"
)

// Log lines that open, mark or end launches, and facts of testRules.
const (
	lnRay     = "To add another node to this Ray cluster, run"
	lnVLLM    = "INFO 04-08 22:00:00 [api_server.py:1] vLLM API server version 0.17.1"
	lnHealthy = "INFO:     Application startup complete."
	lnFail    = "Traceback (most recent call last):"
	lnWant1   = "specs=[{'node:192.168.0.1': 0.001}]"
	lnWant2   = "specs=[{'node:192.168.0.2': 0.001}]"
	lnHave1   = "Local node IP: 10.0.0.1"
	lnHave2   = "Local node IP: 192.168.0.2"
	lnShm     = "NCCL WARN Error while creating shared memory segment nccl-shm-1 (size 9637888)"
	lnTimeout = "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE)"
)

// cev is an event of a cluster; i makes its record ID unique (a repeated
// line is another record).
func cev(cluster, node string, i int, msg string) *parsers.Event {
	e := ev(node, i, msg)
	e.Cluster = cluster
	e.ID = fmt.Sprintf("%s/%s/%d", cluster, node, i)
	return e
}

// seq builds a sequence of one cluster's events from lines.
func seq(cluster string, lines ...string) []*parsers.Event {
	var out []*parsers.Event
	for i, l := range lines {
		out = append(out, cev(cluster, "a", i, l))
	}
	return out
}

// interleave merges sequences one event of each at a time.
func interleave(seqs ...[]*parsers.Event) []*parsers.Event {
	var out []*parsers.Event
	for more := true; more; {
		more = false
		for i := range seqs {
			if len(seqs[i]) > 0 {
				out = append(out, seqs[i][0])
				seqs[i] = seqs[i][1:]
				more = true
			}
		}
	}
	return out
}

// launchView is what a launch holds, comparable across engines.
type launchView struct {
	Num                           int
	Opener                        string
	Pos                           uint64
	Marked, VLLM, Healthy, Failed bool
	Start                         string
	Facts                         map[string]*factState
}

type clusterView struct {
	Seq      int
	Launches []launchView
}

func engineState(e *Engine) (map[string]clusterView, []finding.Finding) {
	e.mu.Lock()
	out := map[string]clusterView{}
	for name, cs := range e.clusters {
		cv := clusterView{Seq: cs.seq}
		for _, ls := range cs.launches {
			cv.Launches = append(cv.Launches, launchView{ls.num, ls.opener, ls.pos, ls.marked, ls.vllmSeen, ls.healthy, ls.failed,
				ls.start.String(), ls.facts})
		}
		out[name] = cv
	}
	e.mu.Unlock()
	return out, e.Findings()
}

func ids(fs []finding.Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, fmt.Sprintf("%s %s launch %d %s", f.ID, f.Rule, f.Launch, f.Status))
	}
	slices.Sort(out)
	return out
}

// checkReplays cuts evs at every step-th event: an engine that saw the
// events up to the cut is checkpointed; a new engine restored from that
// checkpoint (and the findings known then) replays the events from
// cp.From(), skipping as cp.Skip says, to the end. Its launches, facts and
// findings must equal those of an engine that saw every event.
func checkReplays(t *testing.T, rules []*Rule, evs []*parsers.Event, step int) (replayed, cuts int) {
	t.Helper()
	full := NewEngine(rules)
	for i, ev := range evs {
		full.ObserveAt(ev, uint64(i+1))
	}
	wantState, wantFindings := engineState(full)

	live := NewEngine(rules)
	for cut := 0; cut <= len(evs); cut++ {
		if cut > 0 {
			live.ObserveAt(evs[cut-1], uint64(cut))
		}
		if cut%step != 0 && cut != len(evs) {
			continue
		}
		cuts++
		cp := live.Checkpoint()
		re := NewEngine(rules)
		re.Restore(cp, live.Findings())
		from := cp.From()
		for i, ev := range evs {
			pos := uint64(i + 1)
			if pos < from || cp.Skip(ev.Cluster, pos) {
				continue
			}
			re.ObserveAt(ev, pos)
			replayed++
		}
		gotState, gotFindings := engineState(re)
		if !reflect.DeepEqual(gotState, wantState) {
			t.Fatalf("cut at %d (checkpoint %v): launches differ from a full replay\n got %+v\nwant %+v", cut, cp, gotState, wantState)
		}
		if !reflect.DeepEqual(ids(gotFindings), ids(wantFindings)) {
			t.Fatalf("cut at %d (checkpoint %v): findings\n got %q\nwant %q", cut, cp, ids(gotFindings), ids(wantFindings))
		}
		// Findings() orders ties by map iteration; compare by ID.
		byID := func(a, b finding.Finding) int { return strings.Compare(a.ID, b.ID) }
		slices.SortFunc(gotFindings, byID)
		slices.SortFunc(wantFindings, byID)
		if !reflect.DeepEqual(gotFindings, wantFindings) {
			t.Fatalf("cut at %d (checkpoint %v): findings differ from a full replay\n got %+v\nwant %+v", cut, cp, gotFindings, wantFindings)
		}
	}
	return replayed, cuts
}

func TestCheckpointReplayEqualsFullReplay(t *testing.T) {
	rules := mustParse(t, testRules)
	tests := []struct {
		name string
		evs  []*parsers.Event
	}{
		{"unmarked start, then Ray heads (more launches than kept)", seq("c1",
			lnWant1, lnRay, lnWant2, lnHave1, lnRay, lnWant1, lnRay, lnRay, lnWant2, lnHave2,
			lnRay, lnShm, lnTimeout, lnRay, lnWant1, lnHealthy, lnRay, lnWant2)},
		{"a marker first (it marks the first launch, opens none)", seq("c1",
			lnRay, lnWant1, lnVLLM, lnHave1, lnVLLM, lnWant2, lnRay, lnRay, lnVLLM, lnVLLM, lnWant1,
			lnVLLM, lnHave2, lnWant2)},
		{"vLLM banners only, healthy and failed launches", seq("c1",
			lnVLLM, lnWant1, lnFail, lnVLLM, lnWant1, lnHealthy, lnVLLM, lnWant2, lnFail, lnFail, lnVLLM,
			lnWant1, lnVLLM, lnTimeout, lnShm, lnVLLM, lnWant2, lnHave2, lnHealthy, lnVLLM, lnWant1)},
		{"failed launches resolved by a healthy one long after (older launches forgotten)", seq("c1",
			lnVLLM, lnWant1, lnVLLM, lnWant2, lnVLLM, lnShm, lnVLLM, lnTimeout, lnVLLM, lnWant1, lnVLLM,
			lnWant2, lnVLLM, lnHave2, lnHealthy)},
		{"a launch re-marked by the other marker kind", seq("c1",
			lnWant1, lnVLLM, lnRay, lnWant2, lnRay, lnVLLM, lnWant1, lnVLLM, lnRay, lnHave1, lnRay, lnRay)},
		{"two clusters and the default one interleaved", interleave(
			seq("c1", lnWant1, lnRay, lnWant2, lnRay, lnWant1, lnRay, lnRay, lnWant2, lnRay, lnHealthy),
			seq("c2", lnVLLM, lnWant1, lnVLLM, lnHave2, lnWant2, lnVLLM, lnShm, lnVLLM, lnVLLM, lnWant1, lnVLLM),
			seq("", lnHave1, lnWant1, lnRay, lnWant2),
		)},
		{"one cluster appears late", append(
			seq("c1", lnRay, lnWant1, lnRay, lnWant2, lnRay, lnRay, lnRay, lnWant1),
			seq("late", lnWant2, lnVLLM, lnWant1)...)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			replayed, cuts := checkReplays(t, rules, tc.evs, 1)
			t.Logf("%d events, %d cuts, %d events replayed in all (a full replay each time: %d)",
				len(tc.evs), cuts, replayed, cuts*len(tc.evs))
		})
	}
}

// The seed story (a failed launch, then the fixed one) on two clusters
// with the built-in rules: real findings keep their IDs across a replay
// from a checkpoint, whatever the cut.
func TestCheckpointReplayOfTheSeed(t *testing.T) {
	rules, err := LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	dir := "../testdata/logs/seed/both"
	inputs, err := pipeline.ParseArgs([]string{"spark-1=" + dir + "/spark-1", "spark-2=" + dir + "/spark-2"})
	if err != nil {
		t.Fatal(err)
	}
	var one []*parsers.Event
	if _, err := pipeline.Replay(context.Background(), inputs, pipeline.Options{Cluster: "c1"}, func(ev *parsers.Event) error {
		c := *ev
		one = append(one, &c)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// The story three times over (six launches, more than the engine
	// keeps) on c1, and on c2 starting later, so the clusters' launches
	// open at other positions. Each telling a day after the last: a
	// record's time places it in its launch.
	story := func(cluster string) []*parsers.Event {
		var out []*parsers.Event
		for round := range 3 {
			for _, ev := range one {
				c := *ev
				c.Cluster, c.ID = cluster, fmt.Sprintf("%s/%s/%d", ev.ID, cluster, round)
				c.Time = c.Time.AddDate(0, 0, round)
				out = append(out, &c)
			}
		}
		return out
	}
	c1, c2 := story("c1"), story("c2")
	evs := append(c1[:len(one)/2:len(one)/2], interleave(c1[len(one)/2:], c2)...)
	full := NewEngine(rules)
	for _, ev := range evs {
		full.Observe(ev)
	}
	if n := len(full.Findings()); n < 4 {
		t.Fatalf("%d findings from the seed on two clusters; the test needs some", n)
	}
	replayed, cuts := checkReplays(t, rules, evs, max(1, len(evs)/25))
	t.Logf("%d events, %d cuts, %d events replayed in all", len(evs), cuts, replayed)
}

// manyLaunches is two clusters with more launches than the engine keeps
// (a checkpoint starts at a later launch of each), findings in several.
func manyLaunches() []*parsers.Event {
	return interleave(
		seq("c1", lnWant1, lnVLLM, lnWant2, lnHave2, lnFail, lnVLLM, lnWant1, lnVLLM, lnShm, lnVLLM, lnWant1,
			lnHave1, lnVLLM, lnWant2, lnTimeout, lnVLLM, lnWant1, lnHave2, lnHealthy),
		seq("c2", lnRay, lnWant1, lnRay, lnRay, lnShm, lnTimeout, lnRay, lnWant2, lnRay, lnWant1, lnRay, lnHave1),
	)
}

// Finding IDs derive from the records that opened the launches, not from the
// launch counter: a replay from a checkpoint whose numbers are off (another
// analyzer's counter, a checkpoint from a longer history) derives the same
// IDs as a full replay, only the displayed launch numbers differ.
func TestFindingIDsIgnoreTheLaunchCounter(t *testing.T) {
	rules := mustParse(t, testRules)
	evs := manyLaunches()
	full := NewEngine(rules)
	for i, ev := range evs {
		full.ObserveAt(ev, uint64(i+1))
	}
	cp := full.Checkpoint()
	if cp["c1"].Num < 2 || cp["c2"].Num < 2 {
		t.Fatalf("checkpoint %v starts at the first launch; the test needs later ones", cp)
	}
	for name, m := range cp {
		if m.Opener != evs[m.Pos-1].ID {
			t.Errorf("checkpoint of %s names opener %q, the record at %d is %q", name, m.Opener, m.Pos, evs[m.Pos-1].ID)
		}
	}
	// What a replay from cp re-derives: the findings of the kept launches.
	want := map[string]finding.Finding{}
	for _, f := range full.Findings() {
		if f.Launch >= cp[f.Cluster].Num {
			want[f.ID] = f
		}
	}
	if len(want) < 3 {
		t.Fatalf("%d findings in the kept launches; the test needs some", len(want))
	}
	for _, shift := range []int{0, 5, 40} {
		t.Run(fmt.Sprintf("counter %d ahead", shift), func(t *testing.T) {
			shifted := Checkpoint{}
			for name, m := range cp {
				m.Num += shift
				shifted[name] = m
			}
			re := NewEngine(rules)
			re.Restore(shifted, nil)
			for i, ev := range evs {
				if pos := uint64(i + 1); pos >= shifted.From() && !shifted.Skip(ev.Cluster, pos) {
					re.ObserveAt(ev, pos)
				}
			}
			got := re.Findings()
			if len(got) != len(want) {
				t.Errorf("%d findings, want %d: %q", len(got), len(want), ids(got))
			}
			for _, f := range got {
				w, ok := want[f.ID]
				if !ok {
					t.Errorf("finding %s (%s, launch %d) is not a full replay's: %q", f.ID, f.Rule, f.Launch, ids(full.Findings()))
					continue
				}
				if f.LaunchID == "" || f.LaunchID != w.LaunchID {
					t.Errorf("finding %s: launch_id %q, want the full replay's %q", f.ID, f.LaunchID, w.LaunchID)
				}
				if f.Launch != w.Launch+shift || f.Rule != w.Rule || f.Status != w.Status || f.ExplainedBy != w.ExplainedBy {
					t.Errorf("finding %s: launch %d %s %s explained by %q, want launch %d %s %s explained by %q",
						f.ID, f.Launch, f.Rule, f.Status, f.ExplainedBy, w.Launch+shift, w.Rule, w.Status, w.ExplainedBy)
				}
			}
		})
	}
}

// A checkpoint names the opener of its launch (here the clusters' first
// launches): a replay that cannot read the opening record any more (the
// stream's retention dropped it) still gives the launch's findings their
// IDs.
func TestCheckpointOpenerOutlivesItsRecord(t *testing.T) {
	rules := mustParse(t, testRules)
	// The lost opener says nothing the rules use (a lost launch marker
	// would change where launches begin, whatever the IDs).
	evs := interleave(
		seq("c1", "starting up", lnVLLM, lnWant1, lnHave1, lnShm, lnFail),
		seq("c2", "starting up", lnRay, lnTimeout, lnWant2, lnHave1),
	)
	full := NewEngine(rules)
	for i, ev := range evs {
		full.ObserveAt(ev, uint64(i+1))
	}
	want := full.Findings()
	if len(want) < 2 {
		t.Fatalf("%d findings; the test needs some", len(want))
	}
	cp := full.Checkpoint()
	for name, m := range cp {
		if m.Opener != firstLaunch {
			t.Errorf("checkpoint of %s names opener %q, want %q", name, m.Opener, firstLaunch)
		}
	}
	// Through JSON, as serve keeps it.
	b, err := json.Marshal(cp)
	if err != nil {
		t.Fatal(err)
	}
	var read Checkpoint
	if err := json.Unmarshal(b, &read); err != nil || !read.Equal(cp) {
		t.Fatalf("checkpoint %s read back as %v (%v)", b, read, err)
	}
	re := NewEngine(rules)
	re.Restore(read, nil)
	for i, ev := range evs {
		if pos := uint64(i + 1); pos != read[ev.Cluster].Pos { // the openers are gone
			re.ObserveAt(ev, pos)
		}
	}
	if got := re.Findings(); !reflect.DeepEqual(ids(got), ids(want)) {
		t.Errorf("findings without their launches' openers\n got %q\nwant %q", ids(got), ids(want))
	}
}

// A cluster's first launch is opened by whichever record arrives first,
// which differs between a live stream (nodes' records as they arrive) and
// an offline read (merged by time): its findings have the same IDs either
// way. Later launches are opened by their markers, the same records in any
// order.
func TestFindingIDsIgnoreArrivalOrder(t *testing.T) {
	rules := mustParse(t, testRules)
	a := []*parsers.Event{cev("c1", "a", 0, "starting up"), cev("c1", "a", 1, lnWant1), cev("c1", "a", 2, lnVLLM),
		cev("c1", "a", 3, lnWant2), cev("c1", "a", 4, lnShm)}
	b := []*parsers.Event{cev("c1", "b", 0, lnHave1), cev("c1", "b", 1, lnTimeout), cev("c1", "b", 2, lnHave2)}
	var want []string
	for i, order := range [][]*parsers.Event{
		interleave(a, b), interleave(b, a), append(slices.Clone(b), a...), append(slices.Clone(a), b...),
	} {
		e := NewEngine(rules)
		for _, ev := range order {
			e.Observe(ev)
		}
		got := e.Findings()
		var keys []string
		for _, f := range got {
			keys = append(keys, fmt.Sprintf("%s %s launch %d", f.ID, f.Rule, f.Launch))
		}
		slices.Sort(keys)
		if i == 0 {
			if len(got) < 2 {
				t.Fatalf("%d findings; the test needs some: %q", len(got), keys)
			}
			want = keys
			continue
		}
		if !slices.Equal(keys, want) {
			t.Errorf("order %d: findings\n got %q\nwant %q", i, keys, want)
		}
	}
}
