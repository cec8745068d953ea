package index

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/parsers"
)

// TestTimePages: a page in time order is the page that sorting every
// matching event gives (Order), for words spread over all events, bunched
// at either end or in the middle, rarer at the newest end than elsewhere,
// for deep pages, with time filters, and with events that have no time;
// counts, facets and the histogram cover all hits.
func TestTimePages(t *testing.T) {
	x := openTest(t, Options{})
	const n = 3000
	var evs []*parsers.Event
	for i := range n {
		msg := "common"
		switch {
		case i < n/5:
			msg += " oldonly"
		case i >= n-n/100:
			msg += " newonly"
		case i >= n/2-50 && i < n/2+50:
			msg += " middle"
		}
		if i%7 == 0 {
			msg += " sevens"
		}
		if i < 3*n/4 || i%8 == 0 {
			msg += " fading"
		}
		if i%600 == 0 { // a few timed hits, then the untimed ones
			msg += " mixed"
		}
		e := ev("spark-1", "w.log", i+1, 0, parsers.SourceRay, parsers.LevelInfo, msg)
		e.Time = t0.Add(time.Duration(i) * 1234567 * time.Microsecond)
		evs = append(evs, e)
	}
	for i := range 200 { // no time: last in either order
		e := ev("spark-2", "untimed.log", i+1, 0, parsers.SourceOther, parsers.LevelInfo, "common untimed mixed")
		e.Time = time.Time{}
		evs = append(evs, e)
	}
	addAll(t, x, evs[n:]) // first: index order differs from time order
	addAll(t, x, evs[:n])

	mid := t0.Add(n / 2 * 1234567 * time.Microsecond)
	var queries []Query
	for _, text := range []string{"common", "oldonly", "newonly", "middle", "sevens", "fading", "common untimed", "mixed"} {
		for _, sort := range []string{"", "time"} {
			for _, fs := range [][2]int{{0, 10}, {0, 50}, {3, 10}, {40, 10}, {2990, 30}} {
				queries = append(queries,
					Query{Text: text, Sort: sort, From: fs[0], Size: fs[1]},
					Query{Text: text, Sort: sort, From: fs[0], Size: fs[1], Until: mid},
					Query{Text: text, Sort: sort, From: fs[0], Size: fs[1], Since: mid})
			}
		}
	}
	for _, q := range queries {
		want, wantTotal := brutePage(t, evs, q)
		res, err := x.Search(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		got := slices.Clone(res.Hits)
		slices.SortStableFunc(got, Order(q))
		if !slices.Equal(ids(got, false), want) || res.Total != uint64(wantTotal) {
			t.Errorf("%+v:\ngot  %d %v\nwant %d %v", q, res.Total, ids(got, false), wantTotal, want)
		}
	}
	res, err := x.Search(context.Background(), Query{Text: "sevens", Facets: true, Histogram: 10})
	if err != nil {
		t.Fatal(err)
	}
	var inHistogram int
	for _, b := range res.Histogram {
		inHistogram += b.Count
	}
	if want := uint64((n + 6) / 7); res.Total != want || inHistogram != int(want) ||
		len(res.Facets[FieldNode]) != 1 || res.Facets[FieldNode][0].Count != int(want) {
		t.Errorf("sevens: total %d, histogram %d, node facet %v; want %d each", res.Total, inHistogram, res.Facets[FieldNode], want)
	}
}

// TestBoundsFromDictionaries: the bounds read from the term dictionaries
// of a reopened index are the oldest and newest times, before 1970 and far
// ahead included, whatever the events without time.
func TestBoundsFromDictionaries(t *testing.T) {
	dir := t.TempDir()
	x, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	lo := time.Date(1969, 7, 20, 20, 17, 40, 123456789, time.UTC)
	hi := time.Date(2250, 1, 1, 0, 0, 0, 987654321, time.UTC)
	evs := seedEvents()
	evs[0].Time = hi
	evs[3].Time = lo
	evs[5].Time = time.Time{}
	addAll(t, x, evs)
	x = reopenReadOnly(t, x, dir)
	gotLo, gotHi, err := x.Bounds(context.Background())
	if err != nil || !gotLo.Equal(lo) || !gotHi.Equal(hi) {
		t.Errorf("bounds %v %v (err %v), want %v %v", gotLo, gotHi, err, lo, hi)
	}

	empty, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer empty.Close()
	if l, h, err := empty.Bounds(context.Background()); err != nil || !l.IsZero() || !h.IsZero() {
		t.Errorf("empty index: bounds %v %v (err %v), want zero", l, h, err)
	}
}

// TestContextWidens: context finds the nearest records before and after
// in file order when records span many lines (a wide gap, a traceback),
// near the start and the end of the file, and never from another node's
// file of the same name, against a brute-force answer.
func TestContextWidens(t *testing.T) {
	x := openTest(t, Options{Shards: 2})
	var lines []int
	l := 1
	for i := range 60 {
		lines = append(lines, l)
		switch {
		case i%17 == 5:
			l += 5000 // a long traceback or a stretch of other output
		case i%5 == 0:
			l += 40
		default:
			l++
		}
	}
	var evs []*parsers.Event
	for i, l := range lines {
		evs = append(evs, ev("spark-1", "w.log", l, i, parsers.SourceRay, parsers.LevelInfo, fmt.Sprintf("record %d", i)))
		evs = append(evs, ev("spark-2", "w.log", l+1, i, parsers.SourceRay, parsers.LevelInfo, fmt.Sprintf("other %d", i)))
	}
	addAll(t, x, evs)
	for _, n := range []int{1, 3, 10, 100} {
		for i := range lines {
			c, err := x.Context(context.Background(), evs[2*i].ID, n)
			if err != nil {
				t.Fatal(err)
			}
			var got, want []int
			for _, h := range c.Before {
				got = append(got, h.Line)
			}
			for _, h := range c.After {
				got = append(got, -h.Line)
			}
			for _, l := range lines[max(i-n, 0):i] {
				want = append(want, l)
			}
			for _, l := range lines[i+1 : min(i+1+n, len(lines))] {
				want = append(want, -l)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("context %d of line %d: %v, want %v (after negated)", n, lines[i], got, want)
			}
		}
	}
}

// TestFacetsByCount: facets count the hits per value, with filters and
// time ranges, as counting the matching events does.
func TestFacetsByCount(t *testing.T) {
	x := openTest(t, Options{Shards: 2})
	evs := seedEvents()
	levels := []string{parsers.LevelInfo, parsers.LevelWarning, parsers.LevelError}
	sources := []string{parsers.SourceRay, parsers.SourceVLLM, parsers.SourceNCCL}
	for i := range 900 {
		node := fmt.Sprintf("spark-%d", 1+i%3)
		e := ev(node, "f.log", i+100, i, sources[i%len(sources)], levels[(i/3)%len(levels)], fmt.Sprintf("word%d common", i%4))
		if i%5 == 0 {
			e.Container = "" // no value: in no facet term
		}
		evs = append(evs, e)
	}
	addAll(t, x, evs)
	for _, q := range []Query{
		{Text: "common"}, {Text: "word1"}, {Text: "word2 OR word3", Nodes: []string{"spark-2"}},
		{Text: "", Levels: []string{"warning", "error"}}, {Text: "common", Since: t0.Add(100 * time.Second), Until: t0.Add(400 * time.Second)},
		{Text: "nothing-matches"}, {Text: "common", Sort: "score"}, {Text: "-word1 -word2"},
	} {
		q.Facets = true
		got, err := x.Search(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		want := bruteFacets(t, evs, q)
		for _, f := range FacetFields {
			if !slices.Equal(got.Facets[f], want[f]) {
				t.Errorf("%q facet %s: %v, want %v", q.Text, f, got.Facets[f], want[f])
			}
		}
		if q.Text == "common" && len(got.Facets[FieldNode]) != 3 {
			t.Errorf("common: node facet %v, want 3 nodes", got.Facets[FieldNode])
		}
	}
}

// TestPagesOfTiedTimes: paging through hits that share their time (vLLM
// logs have seconds) returns every hit exactly once, in both orders, and
// pages past the timed hits into the untimed ones too.
func TestPagesOfTiedTimes(t *testing.T) {
	x := openTest(t, Options{Shards: 3})
	var evs []*parsers.Event
	for i := range 600 {
		e := ev(fmt.Sprintf("spark-%d", 1+i%2), "vllm.log", i+1, i/100, parsers.SourceVLLM, parsers.LevelInfo, "tied line")
		evs = append(evs, e)
	}
	for i := range 90 {
		e := ev("spark-3", "nccl.log", i+1, 0, parsers.SourceNCCL, parsers.LevelInfo, "tied untimed")
		e.Time = time.Time{}
		evs = append(evs, e)
	}
	addAll(t, x, evs)
	{
		for _, sort := range []string{"", "time", "score"} {
			for _, size := range []int{7, 50} {
				seen := map[string]int{}
				var prev time.Time
				for from := 0; from < len(evs); from += size {
					res, err := x.Search(context.Background(), Query{Text: "tied", Sort: sort, From: from, Size: size})
					if err != nil {
						t.Fatal(err)
					}
					for i, h := range res.Hits {
						// Within a page, one file's lines of one time read in
						// the page's direction.
						if i > 0 {
							p := res.Hits[i-1]
							if p.Time.Equal(h.Time) && p.Node == h.Node && p.File == h.File &&
								(sort == "" && p.Line < h.Line || sort == "time" && p.Line > h.Line) {
								t.Fatalf("sort %q: line %d after line %d of %s %s", sort, h.Line, p.Line, h.Node, h.File)
							}
						}
						seen[h.ID]++
						if !h.Time.IsZero() && !prev.IsZero() && (sort == "" && h.Time.After(prev) || sort == "time" && h.Time.Before(prev)) {
							t.Fatalf("sort %q size %d: %v after %v", sort, size, h.Time, prev)
						}
						if !h.Time.IsZero() {
							prev = h.Time
						}
					}
				}
				var twice int
				for _, n := range seen {
					if n > 1 {
						twice++
					}
				}
				if len(seen) != len(evs) || twice > 0 {
					t.Errorf("sort %q size %d: %d of %d hits seen, %d more than once", sort, size, len(seen), len(evs), twice)
				}
			}
		}
	}
}

// TestHistogramCounts: each bucket counts the hits whose time is in
// [start, end), events on bucket edges, before 1970 and without time
// included, with and without a time filter and size, against a count by
// hand.
func TestHistogramCounts(t *testing.T) {
	x := openTest(t, Options{Shards: 2})
	var evs []*parsers.Event
	for i := range 500 {
		msg := "hist"
		if i%3 == 0 {
			msg += " third"
		}
		e := ev(fmt.Sprintf("spark-%d", 1+i%2), "h.log", i+1, 0, parsers.SourceRay, parsers.LevelInfo, msg)
		switch {
		case i%50 == 0:
			e.Time = time.Time{}
		case i%7 == 0: // on a 10 s edge
			e.Time = t0.Add(time.Duration(i/7*10) * time.Second)
		default:
			e.Time = t0.Add(time.Duration(i) * 1713 * time.Millisecond)
		}
		evs = append(evs, e)
	}
	evs[1].Time = time.Date(1969, 12, 31, 23, 59, 59, 0, time.UTC)
	addAll(t, x, evs)
	for _, q := range []Query{
		{Text: "hist", Histogram: 40},
		{Text: "third", Histogram: 7, Size: -1},
		{Text: "hist", Histogram: 100, Since: t0.Add(100 * time.Second), Until: t0.Add(400 * time.Second)},
		{Text: "hist", Histogram: 3, Since: time.Date(1969, 1, 1, 0, 0, 0, 0, time.UTC), Until: t0},
	} {
		res, err := x.Search(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Histogram) == 0 {
			t.Fatalf("%+v: no histogram", q)
		}
		var got, want []int
		for _, b := range res.Histogram {
			got = append(got, b.Count)
			n := 0
			for _, e := range evs {
				if !e.Time.IsZero() && !e.Time.Before(b.Start) && e.Time.Before(b.End) && strings.Contains(e.Message, q.Text) &&
					(q.Since.IsZero() || !e.Time.Before(q.Since)) && (q.Until.IsZero() || e.Time.Before(q.Until)) {
					n++
				}
			}
			want = append(want, n)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%+v: histogram %v, want %v", q, got, want)
		}
	}
}

// TestReplacedEvents: an event indexed again with other fields (a newer
// parser) replaces the old version, in counts, facets, filters and Get,
// over several batches and shards, after a reopen too; indexed again as
// it was, it is left out.
func TestReplacedEvents(t *testing.T) {
	dir := t.TempDir()
	x, err := Open(dir, Options{Shards: 2})
	if err != nil {
		t.Fatal(err)
	}
	levels := []string{parsers.LevelInfo, parsers.LevelWarning, parsers.LevelError}
	mk := func(i int, level string) *parsers.Event {
		return ev(fmt.Sprintf("spark-%d", 1+i%3), "c.log", i+1, i, parsers.SourceRay, level, fmt.Sprintf("word%d common", i%5))
	}
	var all []*parsers.Event
	for batch := range 4 {
		var evs []*parsers.Event
		for i := batch * 300; i < batch*300+300; i++ {
			evs = append(evs, mk(i, levels[i%2])) // no errors yet
		}
		addAll(t, x, evs)
		all = append(all, evs...)
	}
	var again []*parsers.Event
	for i := 0; i < 1200; i += 7 {
		again = append(again, mk(i, parsers.LevelError))
		all[i] = again[len(again)-1]
	}
	addAll(t, x, again)
	addAll(t, x, again[:50]) // the same versions again: nothing changes
	check := func(x *Index) {
		t.Helper()
		if n, _ := x.DocCount(); n != uint64(len(all)) {
			t.Errorf("doc count %d, want %d", n, len(all))
		}
		for _, text := range []string{"common", "word2", "word1 OR word3", "level:error", "nothing-matches"} {
			q := Query{Text: text, Facets: true, Size: 2000}
			got, err := x.Search(context.Background(), q)
			if err != nil {
				t.Fatal(err)
			}
			want := bruteFacets(t, all, q)
			for _, f := range FacetFields {
				if !slices.Equal(got.Facets[f], want[f]) {
					t.Errorf("%q facet %s: %v, want %v", text, f, got.Facets[f], want[f])
				}
			}
			wantIDs, _ := brutePage(t, all, q)
			slices.Sort(wantIDs)
			if g := ids(got.Hits, true); !slices.Equal(g, wantIDs) {
				t.Errorf("%q: %d hits, want %d", text, len(g), len(wantIDs))
			}
		}
		h, ok, err := x.Get(context.Background(), again[3].ID)
		if err != nil || !ok || h.Level != parsers.LevelError {
			t.Errorf("get of a replaced event: %+v %v %v", h, ok, err)
		}
	}
	check(x)
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	y, err := Open(dir, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer y.Close()
	check(y)
}
