package sink

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/internal/testutil"
	"github.com/faultline/faultline/parsers"
	"github.com/faultline/faultline/pipeline"
	"github.com/faultline/faultline/rule"
)

func mkFinding(id string, updates int) finding.Finding {
	return finding.Finding{ID: id, Rule: "r-" + id, Cause: "c-" + id, Severity: finding.Critical, Title: "title " + id,
		Status: "active", Updates: updates, Evidence: make([]finding.Evidence, updates+1)}
}

// Changes passes a version on once, and only what is new or changed; the
// versions known before (stored findings) are not passed again.
func TestChangesPassesNewVersionsOnce(t *testing.T) {
	var buf bytes.Buffer
	c := NewChanges([]finding.Finding{mkFinding("a", 1)}, NewJSON(&buf, nil))
	ctx := context.Background()
	for _, batch := range [][]finding.Finding{
		{mkFinding("a", 1)},                    // known from before: dropped
		{mkFinding("b", 0), mkFinding("a", 2)}, // new, changed
		{mkFinding("b", 0)},                    // repeat: dropped
		{mkFinding("a", 1)},                    // older version: dropped
	} {
		if err := c.Announce(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"id":"b"`) || !strings.Contains(lines[1], `"id":"a"`) ||
		!strings.Contains(lines[1], `"updates":2`) {
		t.Errorf("passed on:\n%s", buf.String())
	}
	if c.Len() != 2 {
		t.Errorf("Len %d, want 2", c.Len())
	}
}

// The terminal shows a finding in full once, then one line per change.
func TestTextShowsOnceThenChanges(t *testing.T) {
	var buf bytes.Buffer
	s := NewText(&buf, nil)
	ctx := context.Background()
	root := mkFinding("a", 0)
	cons := mkFinding("b", 0)
	cons.ExplainedBy = "a"
	s.Announce(ctx, []finding.Finding{root})
	s.Announce(ctx, []finding.Finding{cons})
	upd := root
	upd.Updates, upd.Evidence = 3, make([]finding.Evidence, 4)
	s.Announce(ctx, []finding.Finding{upd})
	out := buf.String()
	if strings.Count(out, "[CRITICAL] r-a — title a") != 1 {
		t.Errorf("root not shown exactly once in full:\n%s", out)
	}
	if !strings.Contains(out, "↳ consequence of r-a (a)") {
		t.Errorf("consequence not shown under its root announced earlier:\n%s", out)
	}
	if !strings.Contains(out, "↻ c-a [critical] a: 4 evidence record(s), update 3") {
		t.Errorf("update not one line:\n%s", out)
	}
}

type failing struct{ closed bool }

func (f *failing) Announce(context.Context, []finding.Finding) error { return errors.New("down") }
func (f *failing) Close() error                                      { f.closed = true; return nil }

// A failing sink does not keep the findings from the sinks after it.
func TestMultiKeepsGoing(t *testing.T) {
	var buf bytes.Buffer
	bad := &failing{}
	m := Multi{bad, NewJSON(&buf, nil)}
	err := m.Announce(context.Background(), []finding.Finding{mkFinding("a", 0)})
	if err == nil || !strings.Contains(err.Error(), "down") {
		t.Errorf("error %v", err)
	}
	if !strings.Contains(buf.String(), `"id":"a"`) {
		t.Errorf("the second sink got nothing")
	}
	m.Close()
	if !bad.closed {
		t.Error("not closed")
	}
}

// recorder keeps what it is given.
type recorder struct{ got []finding.Finding }

func (r *recorder) Announce(_ context.Context, fs []finding.Finding) error {
	r.got = append(r.got, fs...)
	return nil
}
func (r *recorder) Close() error { return nil }

func TestNewer(t *testing.T) {
	v := func(updates int, status finding.Status, explainedBy string) finding.Finding {
		return finding.Finding{ID: "a", Updates: updates, Status: status, ExplainedBy: explainedBy}
	}
	tests := []struct {
		name     string
		f, old   finding.Finding
		newer    bool
		replayed bool // an older version a replay re-derives: must not be newer
	}{
		{"same version", v(2, "active", "r"), v(2, "active", "r"), false, true},
		{"more updates", v(3, "active", ""), v(2, "active", ""), true, false},
		{"more updates, root cause lost meanwhile", v(3, "active", ""), v(2, "active", "r"), true, false},
		{"fewer updates", v(1, "active", "r"), v(2, "active", "r"), false, true},
		{"fewer updates, no root cause yet", v(1, "active", ""), v(2, "active", "r"), false, true},
		{"fewer updates, active again after a retraction", v(1, "active", ""), v(2, "retracted", ""), false, true},
		{"fewer updates, an earlier retraction", v(2, "retracted", ""), v(4, "active", ""), false, true},
		{"resolved, with fewer updates (a replay that lost records)", v(2, "resolved", ""), v(4, "active", ""), true, false},
		{"resolved, with more updates", v(4, "resolved", ""), v(2, "resolved", ""), true, false},
		{"back from resolved to active, with more updates", v(4, "active", ""), v(2, "resolved", ""), false, true},
		{"resolved after a retraction", v(3, "resolved", ""), v(4, "retracted", ""), true, false},
		{"resolved, same updates", v(2, "resolved", ""), v(2, "active", ""), true, false},
		{"retracted, same updates", v(2, "retracted", ""), v(2, "active", ""), true, false},
		{"same updates, back from resolved to active", v(2, "active", ""), v(2, "resolved", ""), false, true},
		{"same updates, back from retracted to active", v(2, "active", ""), v(2, "retracted", ""), false, true},
		{"same updates, a root cause found", v(2, "active", "r"), v(2, "active", ""), true, false},
		{"same updates, root cause back to empty", v(2, "active", ""), v(2, "active", "r"), false, true},
		{"same updates, another root cause", v(2, "active", "s"), v(2, "active", "r"), false, true},
		{"resolved, same updates, root cause back to empty", v(2, "resolved", ""), v(2, "resolved", "r"), false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Newer(tc.f, tc.old); got != tc.newer {
				t.Errorf("Newer(%+v, %+v) = %v, want %v", tc.f, tc.old, got, tc.newer)
			}
			if tc.replayed && tc.newer {
				t.Fatal("the table says a re-derived version is newer")
			}
			if tc.newer && Newer(tc.old, tc.f) {
				t.Errorf("both versions are newer than each other")
			}
		})
	}
}

// Changes numbers the versions it passes on, 1, 2, 3 per finding, without
// a gap for the versions it drops; a finding stored before revisions were
// numbered goes on from 1.
func TestChangesNumbersRevisions(t *testing.T) {
	rec := &recorder{}
	legacy := mkFinding("old", 2) // stored without a revision
	c := NewChanges([]finding.Finding{legacy}, rec)
	ctx := context.Background()
	root := func(updates int, status finding.Status) finding.Finding {
		f := mkFinding("a", updates)
		f.Status = status
		return f
	}
	explained := mkFinding("b", 1)
	explained.ExplainedBy = "a"
	for _, batch := range [][]finding.Finding{
		{root(1, "active"), mkFinding("b", 1)},
		{root(1, "active")},                    // the same again
		{root(2, "active"), explained},         // a, then b's root cause found
		{root(1, "active"), mkFinding("b", 1)}, // older versions re-derived
		{root(3, "resolved")},
		{mkFinding("old", 2), mkFinding("old", 3)},
	} {
		if err := c.Announce(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, f := range rec.got {
		got = append(got, fmt.Sprintf("%s u%d r%d", f.ID, f.Updates, f.Revision))
	}
	want := []string{"a u1 r1", "b u1 r1", "a u2 r2", "b u1 r2", "a u3 r3", "old u3 r2"}
	if !slices.Equal(got, want) {
		t.Errorf("passed on %q, want %q", got, want)
	}
}

// A replay of real logs through a new engine, behind a Changes that knows
// what the first run announced (as serve's stored findings), passes nothing
// on; the first run numbered each finding's versions 1, 2, 3...
func TestChangesReplayAssignsNoRevision(t *testing.T) {
	rules, err := rule.LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{
		"seed/both", // the failed launch, then the fixed one: a resolution
		"real/12-nccl-ib-docker-no-rdma-device",
		"real/03-nccl-shm-docker-64mb-xgboost",
	} {
		t.Run(dir, func(t *testing.T) {
			inputs, err := pipeline.ParseArgs([]string{"../testdata/logs/" + dir})
			if err != nil {
				t.Fatal(err)
			}
			run := func(stored []finding.Finding) *recorder {
				rec := &recorder{}
				c := NewChanges(stored, rec)
				e := rule.NewEngine(rules)
				if _, err := pipeline.Replay(context.Background(), inputs, pipeline.Options{}, func(ev *parsers.Event) error {
					return c.Announce(context.Background(), e.Observe(ev))
				}); err != nil {
					t.Fatal(err)
				}
				return rec
			}
			first := run(nil)
			last := map[string]finding.Finding{} // what serve stores: the last version announced
			for _, f := range first.got {
				if want := last[f.ID].Revision + 1; f.Revision != want {
					t.Errorf("finding %s (%s) with %d updates is revision %d, want %d", f.ID, f.Rule, f.Updates, f.Revision, want)
				}
				last[f.ID] = f
			}
			if len(first.got) <= len(last) {
				t.Fatalf("%d versions of %d findings; the test needs findings that change", len(first.got), len(last))
			}
			again := run(slices.Collect(maps.Values(last)))
			for _, f := range again.got {
				t.Errorf("the replay announced %s (%s) again: %d updates, %s, revision %d", f.ID, f.Rule, f.Updates, f.Status, f.Revision)
			}
		})
	}
}

// failOnce fails its first call.
type failOnce struct {
	calls int
	got   []finding.Finding
}

func (f *failOnce) Announce(_ context.Context, fs []finding.Finding) error {
	f.calls++
	if f.calls == 1 {
		return errors.New("down")
	}
	f.got = append(f.got, fs...)
	return nil
}

func (f *failOnce) Close() error { return nil }

// Issue 22 item 6: Changes counts a version as announced only once the
// sink after it took it: announced again after a failure, it is passed on
// again, under the same revision. Fails where it is marked known before.
func TestChangesKnowsOnlyWhatTheNextSinkTook(t *testing.T) {
	next := &failOnce{}
	c := NewChanges(nil, next)
	ctx := context.Background()
	f := mkFinding("a", 1)
	if err := c.Announce(ctx, []finding.Finding{f}); err == nil {
		t.Fatal("the sink's failure was not returned")
	}
	if err := c.Announce(ctx, []finding.Finding{f}); err != nil {
		t.Fatal(err)
	}
	if len(next.got) != 1 || next.got[0].Revision != 1 {
		t.Errorf("after a failure the sink got %+v, want the version again as revision 1", next.got)
	}
}

// A --findings-json file on a disk that fills up: the announcement that
// meets the full disk fails (the lane retries it), and the file keeps only
// whole lines: the retry after space returned is one readable line, not
// glued to the torn rest of the failed write.
func TestJSONFileOnAFullDisk(t *testing.T) {
	disk := testutil.SmallDisk(t, filepath.Join(t.TempDir(), "fs"), 1<<20)
	path := filepath.Join(disk.Dir, "findings.jsonl")
	j, err := OpenJSONFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	ctx := context.Background()
	version := func(id string, size int) finding.Finding {
		f := mkFinding(id, 0)
		f.Summary = strings.Repeat("s", size)
		return f
	}
	if err := j.Announce(ctx, []finding.Finding{version("a", 100)}); err != nil {
		t.Fatal(err)
	}
	disk.Fill(t, 0)
	big := version("b", 64<<10) // more than the last page holds: the write starts, then fails
	for range 2 {
		if err := j.Announce(ctx, []finding.Finding{big}); err == nil {
			t.Fatal("an announcement on a full disk succeeded")
		}
	}
	disk.Free(t)
	for _, f := range []finding.Finding{big, version("c", 100)} {
		if err := j.Announce(ctx, []finding.Finding{f}); err != nil {
			t.Fatalf("announce %s after space returned: %v", f.ID, err)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		var f struct{ ID string }
		if err := json.Unmarshal([]byte(line), &f); err != nil {
			t.Fatalf("%s:%d is no JSON line (%v): %.80q", path, i+1, err, line)
		}
		ids = append(ids, f.ID)
	}
	if want := []string{"a", "b", "c"}; !slices.Equal(ids, want) {
		t.Errorf("file holds %v, want %v", ids, want)
	}
}
