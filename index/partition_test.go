package index

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/parsers"
)

// TestPartitionFilter: Query.Partitions keeps the hits, total, facets and
// histogram to the events of those partitions (0 being the events of no
// cluster partition), by time and by score, and paged by cursor; nil
// filters nothing, an empty list matches nothing; hits report their
// partition, and the filter survives a reopen (it is stored, not only
// kept in memory); Options.Partitioned changes nothing.
func TestPartitionFilter(t *testing.T) {
	for _, partitioned := range []bool{false, true} {
		t.Run(fmt.Sprintf("partitioned=%v", partitioned), func(t *testing.T) { testPartitionFilter(t, partitioned) })
	}
}

func testPartitionFilter(t *testing.T, partitioned bool) {
	dir := t.TempDir()
	x, err := Open(dir, Options{Shards: 3, Partitioned: partitioned})
	if err != nil {
		t.Fatal(err)
	}
	var evs []*parsers.Event
	for i := range 240 {
		e := ev(fmt.Sprintf("spark-%d", 1+i%3), "p.log", i+1, i/7, parsers.SourceVLLM, []string{"info", "error"}[i%2], "part line")
		e.Partition = i % 4
		if i%17 == 0 {
			e.Time = time.Time{}
		}
		evs = append(evs, e)
	}
	addAll(t, x, evs)
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	if x, err = Open(dir, Options{ReadOnly: true, Partitioned: partitioned}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	ctx := context.Background()
	for _, ps := range [][]int{nil, {}, {0}, {2}, {1, 3}, {0, 2, 2}, {5}} {
		for _, sort := range []string{"-time", "time", "score"} {
			name := fmt.Sprintf("partitions %v sort %s", ps, sort)
			in := func(e *parsers.Event) bool { return ps == nil || slices.Contains(ps, e.Partition) }
			want := map[string]int{}
			nodes := map[string]int{}
			var timed int
			for _, e := range evs {
				if in(e) {
					want[e.ID] = e.Partition
					nodes[e.Node]++
					if !e.Time.IsZero() {
						timed++
					}
				}
			}
			q := Query{Text: "line", Sort: sort, Partitions: ps, Facets: true, Histogram: 20, Size: 25}
			got := map[string]int{}
			for page := 0; ; page++ {
				res, err := x.Search(ctx, q)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if res.Total != uint64(len(want)) {
					t.Fatalf("%s: total %d, want %d", name, res.Total, len(want))
				}
				if page == 0 {
					checkFacetAndHistogram(t, name, res, nodes, timed)
				}
				for _, h := range res.Hits {
					got[h.ID] = h.Partition
				}
				if res.Next == "" {
					break
				}
				q.After, q.Facets, q.Histogram = res.Next, false, 0
			}
			if !maps.Equal(got, want) {
				t.Errorf("%s: %d hits (with partitions), want %d", name, len(got), len(want))
			}
		}
	}
}

func checkFacetAndHistogram(t *testing.T, name string, res Result, nodes map[string]int, timed int) {
	t.Helper()
	got := map[string]int{}
	for _, ft := range res.Facets[FieldNode] {
		got[ft.Term] = ft.Count
	}
	if !maps.Equal(got, nodes) {
		t.Errorf("%s: node facet %v, want %v", name, got, nodes)
	}
	var sum int
	for _, b := range res.Histogram {
		sum += b.Count
	}
	if sum != timed {
		t.Errorf("%s: histogram sums to %d, want %d", name, sum, timed)
	}
}

// TestCursorAfterIsNext: the cursor made from a page's last hit in Order
// is the page's Next, in every order, so that a fan-out's cursor (made
// from a merged page) is one every index reads; pages come in Order but
// for ArrangePage's ties.
func TestCursorAfterIsNext(t *testing.T) {
	x := openTest(t, Options{Shards: 3})
	var evs []*parsers.Event
	for i := range 150 {
		msg := "cursor line"
		if i%3 == 0 {
			msg += " line"
		}
		e := ev(fmt.Sprintf("spark-%d", 1+i%2), "c.log", i+1, i/20, parsers.SourceVLLM, parsers.LevelInfo, msg)
		if i%11 == 0 {
			e.Time = time.Time{}
		}
		evs = append(evs, e)
	}
	addAll(t, x, evs)
	for _, sort := range []string{"-time", "time", "score"} {
		q := Query{Text: "line", Sort: sort, Size: 13}
		var all []Hit
		for {
			res, err := x.Search(context.Background(), q)
			if err != nil {
				t.Fatal(err)
			}
			page := slices.Clone(res.Hits)
			slices.SortStableFunc(page, Order(q))
			shown := slices.Clone(page)
			ArrangePage(q, shown)
			if !slices.EqualFunc(shown, res.Hits, sameID) {
				t.Fatalf("sort %s: the page is not its hits in Order then arranged", sort)
			}
			all = append(all, page...)
			if res.Next == "" {
				break
			}
			if got := CursorAfter(q, page[len(page)-1]); got != res.Next {
				t.Fatalf("sort %s: CursorAfter %s, Next %s", sort, got, res.Next)
			}
			q.After = res.Next
		}
		if len(all) != len(evs) || !slices.IsSortedFunc(all, Order(q)) {
			t.Errorf("sort %s: %d hits, in Order: %v", sort, len(all), slices.IsSortedFunc(all, Order(q)))
		}
		if strings.Contains(sort, "time") && !all[len(all)-1].Time.IsZero() {
			t.Errorf("sort %s: untimed hits are not last", sort)
		}
	}
}

func sameID(a, b Hit) bool { return a.ID == b.ID }
