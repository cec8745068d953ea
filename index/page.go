package index

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
)

// windowMinHits is the number of hits from which a page in time order is
// looked for in a window at the newest (or oldest) end first (see
// Index.windowMin).
const windowMinHits = 4000

// timePage returns the page [from, from+size) of q's total hits in time
// order. Sorting reads every hit's time from doc values, ~300 ns a hit:
// 56 ms for an IP address with 184k hits in 4.3M events. With many hits
// the page is first looked for among the newest: a time window expected to
// hold four pages (from the total and the index's time span), widened while
// it holds fewer hits than the page needs. A window holding enough hits
// holds exactly the page, since every hit outside it is older (newer, for
// oldest first). After three windows, or for deep pages, all hits are
// sorted.
func (x *Index) timePage(ctx context.Context, q Query, bq query.Query, total uint64, size, from int,
	sortBy []string) (*bleve.SearchResult, error) {
	need := uint64(from + size)
	frac := 4 * float64(need) / float64(max(total, 1))
	if total >= uint64(x.windowMin) && frac < 0.5 {
		lo, hi, err := x.Bounds(ctx)
		if err != nil {
			return nil, err
		}
		if !q.Since.IsZero() && q.Since.After(lo) {
			lo = q.Since
		}
		if !q.Until.IsZero() && q.Until.Before(hi) {
			hi = q.Until
		}
		newest := q.Sort != "time"
		// With a time filter every hit has a time; otherwise some may have
		// none (NCCL and traceback lines often), and those sort last.
		timedKnown := !q.Since.IsZero() || !q.Until.IsZero()
		for try := 0; try < 3 && frac < 0.5 && hi.After(lo); try++ {
			w := time.Duration(float64(hi.Sub(lo)) * frac)
			// The window narrows bq (already within q's own range).
			window := timeRangeQuery(alignTime(hi.Add(-w), w, false), time.Time{})
			if !newest {
				window = timeRangeQuery(time.Time{}, alignTime(lo.Add(w), w, true))
			}
			wq := and(bq, window)
			sr, err := x.searchPage(ctx, x.request(wq, q, size, from, sortBy))
			if err != nil {
				return nil, err
			}
			if sr.Total >= need {
				x.windowed.Add(1)
				return sr, nil
			}
			if !timedKnown {
				timed, err := x.count(ctx, and(bq, anyTime()))
				if err != nil {
					return nil, err
				}
				if timed < need {
					return x.untimedPage(ctx, q, bq, timed, size, from, sortBy)
				}
				timedKnown = true
				frac = max(frac, 4*float64(need)/float64(timed))
			}
			// Widen by what this window held, at least 4 times.
			frac *= max(4, 2*float64(need)/float64(max(sr.Total, 1)))
		}
	}
	return x.searchPage(ctx, x.request(bq, q, size, from, sortBy))
}

// anyTime matches the events that have a time.
func anyTime() query.Query { return timeRangeInclusive(math.MinInt64, math.MaxInt64) }

// untimedPage returns the page of hits when it reaches past the timed hits
// (timed of them) into those without a time, which sort last in any
// order: sorting them all by a time they lack cost 57 ms for the 243k
// untimed NCCL lines holding "Bootstrap" in 5M events. The timed part is
// sorted, the rest comes in index order.
func (x *Index) untimedPage(ctx context.Context, q Query, bq query.Query, timed uint64, size, from int,
	sortBy []string) (*bleve.SearchResult, error) {
	out := &bleve.SearchResult{}
	if uint64(from) < timed {
		n := int(min(uint64(size), timed-uint64(from)))
		sr, err := x.searchPage(ctx, x.request(and(bq, anyTime()), q, n, from, sortBy))
		if err != nil {
			return nil, err
		}
		out.Hits = sr.Hits
	}
	if rest := size - len(out.Hits); rest > 0 {
		untimed := bq
		if timed > 0 {
			b := bleve.NewBooleanQuery()
			b.AddMust(bq)
			b.AddMustNot(anyTime())
			untimed = b
		}
		sr, err := x.searchPage(ctx, x.request(untimed, q, rest, int(uint64(max(from, 0))-min(uint64(from), timed)), nil))
		if err != nil {
			return nil, err
		}
		out.Hits = append(out.Hits, sr.Hits...)
	}
	return out, nil
}

// alignTime moves t, the open end of a window of width w, outwards (up
// when up) to the edge of the widest time bucket at most w/8 wide: the
// window grows by at most an eighth, and its range needs no terms of the
// finer widths.
func alignTime(t time.Time, w time.Duration, up bool) time.Time {
	var s uint
	for _, ts := range timeShifts {
		if time.Duration(1)<<ts <= w/8 {
			s = ts
		}
	}
	if s == 0 {
		return t
	}
	mask := uint64(1)<<s - 1
	u := sortable(timeNanos(t))
	switch {
	case !up:
		u &^= mask
	case u&mask != 0 && u|mask != math.MaxUint64:
		u = u | mask + 1
	}
	return time.Unix(0, int64(u^1<<63)).UTC()
}

// count returns the number of hits of bq.
func (x *Index) count(ctx context.Context, bq query.Query) (uint64, error) {
	sr, err := x.alias.SearchInContext(ctx, x.request(bq, Query{}, 0, 0, nil))
	if err != nil {
		return 0, fmt.Errorf("search: %w", err)
	}
	return sr.Total, nil
}

// searchPage runs req, a request for a page of hits, on every shard and
// merges the shards' hits in one total order: req's sort, then the shard,
// then the shard's own order. Bleve's alias breaks ties between shards by
// each shard's hit number, which depends on the query (a time window
// numbers the same hits differently) and on how deep the page is, so
// paging through hits that share a time (vLLM logs have seconds) repeated
// some hits and skipped others.
func (x *Index) searchPage(ctx context.Context, req *bleve.SearchRequest) (*bleve.SearchResult, error) {
	results := make([]*bleve.SearchResult, len(x.shards))
	errs := make([]error, len(x.shards))
	var wg sync.WaitGroup
	for i, s := range x.shards {
		sub := *req
		sub.From, sub.Size = 0, req.From+req.Size
		sub.Sort = req.Sort.Copy() // a sort keeps state while collecting
		wg.Go(func() { results[i], errs[i] = s.idx.SearchInContext(ctx, &sub) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	type shardHit struct {
		dm    *search.DocumentMatch
		shard int
	}
	var all []shardHit
	out := &bleve.SearchResult{}
	for i, sr := range results {
		out.Total += sr.Total
		for _, dm := range sr.Hits {
			all = append(all, shardHit{dm, i})
		}
	}
	slices.SortFunc(all, func(a, b shardHit) int {
		for k, so := range req.Sort {
			c := strings.Compare(a.dm.Sort[k], b.dm.Sort[k])
			if so.Descending() {
				c = -c
			}
			if c != 0 {
				return c
			}
		}
		return cmp.Or(cmp.Compare(a.shard, b.shard), cmp.Compare(a.dm.HitNumber, b.dm.HitNumber))
	})
	for _, h := range all[min(req.From, len(all)):min(req.From+req.Size, len(all))] {
		out.Hits = append(out.Hits, h.dm)
	}
	return out, nil
}
