package index

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/parsers"
)

// TestCursorPaging: paging by cursor (Query.After, Result.Next) through
// hits that share their time (six seconds for 600 hits, across three
// shards) and hits without time returns every hit exactly once, in the
// query's order, in both time orders and by score; the last page has no
// Next; a cursor page is the same page as the one at the same From.
func TestCursorPaging(t *testing.T) {
	x := openTest(t, Options{Shards: 3})
	var evs []*parsers.Event
	for i := range 600 {
		evs = append(evs, ev(fmt.Sprintf("spark-%d", 1+i%2), "vllm.log", i+1, i/100, parsers.SourceVLLM, parsers.LevelInfo, "tied line"))
	}
	for i := range 90 {
		e := ev("spark-3", "nccl.log", i+1, 0, parsers.SourceNCCL, parsers.LevelInfo, "tied untimed")
		e.Time = time.Time{}
		evs = append(evs, e)
	}
	addAll(t, x, evs)
	ctx := context.Background()
	{
		for _, c := range []struct {
			q    Query
			want int
		}{
			{Query{Text: "tied"}, len(evs)},
			{Query{Text: "tied", Sort: "time"}, len(evs)},
			{Query{Text: "tied", Sort: "score"}, len(evs)},
			{Query{Text: "line", Since: t0.Add(time.Second), Until: t0.Add(5 * time.Second)}, 400},
			{Query{Text: "tied", Sort: "time", Nodes: []string{"spark-1", "spark-3"}}, 390},
		} {
			for _, size := range []int{1, 7, 50, 100} {
				if size == 1 && c.want > 400 {
					continue // the same edges as 7, hundreds of searches more
				}
				name := fmt.Sprintf("%q sort %q size %d", c.q.Text, c.q.Sort, size)
				seen := map[string]int{}
				var prev *Hit
				q := c.q
				q.Size = size
				for page := 0; ; page++ {
					res, err := x.Search(ctx, q)
					if err != nil {
						t.Fatalf("%s page %d: %v", name, page, err)
					}
					if res.Total != uint64(c.want) {
						t.Fatalf("%s page %d: total %d, want %d", name, page, res.Total, c.want)
					}
					if page%5 == 2 { // the page at the same From holds the same hits
						fq := c.q
						fq.Size, fq.From = size, page*size
						fres, err := x.Search(ctx, fq)
						if err != nil {
							t.Fatal(err)
						}
						if a, b := ids(fres.Hits, true), ids(res.Hits, true); !slices.Equal(a, b) {
							t.Fatalf("%s page %d: from=%d holds %v, the cursor page %v", name, page, fq.From, a, b)
						}
					}
					for _, h := range res.Hits {
						seen[h.ID]++
						if prev != nil && outOfOrder(c.q.Sort, *prev, h) {
							t.Fatalf("%s page %d: %s at %v after %s at %v", name, page, h.ID, h.Time, prev.ID, prev.Time)
						}
						prev = &h
					}
					if res.Next == "" {
						if len(seen) < c.want && len(res.Hits) > 0 {
							t.Fatalf("%s: no next after %d of %d hits", name, len(seen), c.want)
						}
						break
					}
					if len(res.Hits) != size {
						t.Fatalf("%s page %d: %d hits and a next cursor", name, page, len(res.Hits))
					}
					q.After = res.Next
				}
				twice := 0
				for _, n := range seen {
					twice += n - 1
				}
				if len(seen) != c.want || twice > 0 {
					t.Errorf("%s: %d of %d hits seen, %d repeats", name, len(seen), c.want, twice)
				}
			}
		}
	}
}

// ids are the IDs of hs, sorted when sorted.
func ids(hs []Hit, sorted bool) []string {
	out := make([]string, 0, len(hs))
	for _, h := range hs {
		out = append(out, h.ID)
	}
	if sorted {
		slices.Sort(out)
	}
	return out
}

// outOfOrder reports whether h may not follow prev in the order sort: by
// time (untimed last), or by score then newest first.
func outOfOrder(sort string, prev, h Hit) bool {
	if sort == "score" {
		if prev.Score != h.Score {
			return h.Score > prev.Score
		}
		sort = "-time"
	}
	switch {
	case prev.Time.IsZero():
		return !h.Time.IsZero()
	case h.Time.IsZero():
		return false
	case sort == "time":
		return h.Time.Before(prev.Time)
	}
	return h.Time.After(prev.Time)
}

// TestBadCursor: a cursor that is not one, one of another query or order,
// and a cursor with From are errors of the query (HTTP 400) saying so.
func TestBadCursor(t *testing.T) {
	x := openTest(t, Options{Shards: 2})
	addAll(t, x, seedEvents())
	ctx := context.Background()
	res, err := x.Search(ctx, Query{Text: "ray", Size: 1})
	if err != nil || res.Next == "" {
		t.Fatalf("first page: next %q, err %v", res.Next, err)
	}
	for _, c := range []struct {
		q    Query
		want string
	}{
		{Query{Text: "ray", After: "garbage!"}, "not a cursor"},
		{Query{Text: "ray", After: res.Next[:len(res.Next)-3]}, "not a cursor"},
		{Query{Text: "ray", After: "eyJ2IjoxfQ"}, "not a cursor"}, // {"v":1}
		{Query{Text: "nccl", After: res.Next}, "another query"},
		{Query{Text: "ray", Sort: "time", After: res.Next}, "another query"},
		{Query{Text: "ray", From: 1, After: res.Next}, "from and after"},
	} {
		_, err := x.Search(ctx, c.q)
		if !errors.Is(err, ErrBadCursor) || !IsBadQuery(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err %v, want ErrBadCursor saying %q", c.q, err, c.want)
		}
	}
	if _, err := x.Search(ctx, Query{Text: "ray", Size: 1, After: res.Next}); err != nil {
		t.Errorf("the cursor itself: %v", err)
	}
	// A count without hits (the timeline's per node) has no page to start.
	if r, err := x.Search(ctx, Query{Text: "ray", Nodes: []string{"spark-1"}, Size: -1, After: res.Next}); err != nil || r.Total == 0 {
		t.Errorf("a count with a cursor: %d, %v", r.Total, err)
	}
}
