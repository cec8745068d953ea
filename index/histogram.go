package index

import (
	"context"
	"fmt"
	"sync"

	"github.com/blevesearch/bleve/v2/numeric"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
)

// histogram counts the hits of bq per bucket (consecutive, of one width)
// in one pass over their times. Bleve's date-range facet tests every hit
// against every range: 227 ms for a 60-bucket histogram of 214k hits in
// 5M events, where finding the bucket by division leaves the doc-value
// reads alone. Hits without a time are not counted.
func (x *Index) histogram(ctx context.Context, bq query.Query, buckets []Bucket) error {
	if len(buckets) == 0 {
		return nil
	}
	start := timeNanos(buckets[0].Start)
	width := buckets[0].End.Sub(buckets[0].Start).Nanoseconds()
	counts := make([][]int, len(x.shards))
	errs := make([]error, len(x.shards))
	var wg sync.WaitGroup
	for i, s := range x.shards {
		wg.Go(func() {
			counts[i] = make([]int, len(buckets))
			errs[i] = x.shardHistogram(ctx, s, bq, start, width, counts[i])
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("histogram of shard %d: %w", i, err)
		}
	}
	for _, c := range counts {
		for b, n := range c {
			buckets[b].Count += n
		}
	}
	return nil
}

// shardHistogram adds the hits of bq in s to counts, bucket b holding the
// times [start+b*width, start+(b+1)*width) in nanoseconds.
func (x *Index) shardHistogram(ctx context.Context, s *shard, bq query.Query, start, width int64, counts []int) error {
	ai, err := s.idx.Advanced()
	if err != nil {
		return err
	}
	r, err := ai.Reader()
	if err != nil {
		return err
	}
	defer r.Close()
	sr, err := bq.Searcher(ctx, r, x.mapping, search.SearcherOptions{Score: "none"})
	if err != nil {
		return err
	}
	defer sr.Close()
	dvr, err := r.DocValueReader([]string{FieldTimeSort})
	if err != nil {
		return err
	}
	visit := func(_ string, term []byte) {
		if shift, err := numeric.PrefixCoded(term).Shift(); err != nil || shift != 0 {
			return
		}
		ns, err := numeric.PrefixCoded(term).Int64()
		if err != nil || ns < start {
			return
		}
		if b := (ns - start) / width; b < int64(len(counts)) {
			counts[b]++
		}
	}
	sctx := &search.SearchContext{DocumentMatchPool: search.NewDocumentMatchPool(sr.DocumentMatchPoolSize(), 0)}
	for n := 0; ; n++ {
		if n%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		dm, err := sr.Next(sctx)
		if err != nil {
			return err
		}
		if dm == nil {
			return nil
		}
		if err := dvr.VisitDocValues(dm.IndexInternalID, visit); err != nil {
			return err
		}
		sctx.DocumentMatchPool.Put(dm)
	}
}
