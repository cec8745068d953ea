package index

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
	bindex "github.com/blevesearch/bleve_index_api"
	segment "github.com/blevesearch/scorch_segment_api/v2"
)

// A tally counts, in one pass over the hits of a query, the hits having
// each of some terms (facets of many hits) and the hits per time bucket
// (the histogram).
//
// Terms: the hits are collected per segment as a bitmap and each term's
// postings in that segment intersected with it. A search per term cost
// ~6 ms for 214k hits in 5M events, Bleve's facets read four doc values a
// hit (~200 ms); an intersection costs microseconds, the pass ~25 ms.
//
// Buckets: each hit's time is read from doc values and its bucket found by
// division. Bleve's date-range facet tests every hit against every range:
// 227 ms for 60 buckets of 214k hits, 78 ms this way.
type tally struct {
	terms   map[string]map[string]int // field -> term -> hits
	buckets []int
}

// errNoBitmaps says a shard's segments do not expose their postings as
// bitmaps (not a scorch index of zap segments); terms are then counted
// another way.
var errNoBitmaps = errors.New("index: postings are not bitmaps")

// bucketing is the time buckets of a histogram: n of width ns from start.
type bucketing struct {
	start, width int64
	n            int
}

func bucketingOf(buckets []Bucket) bucketing {
	if len(buckets) == 0 {
		return bucketing{}
	}
	return bucketing{start: timeNanos(buckets[0].Start), width: buckets[0].End.Sub(buckets[0].Start).Nanoseconds(), n: len(buckets)}
}

// tally counts the hits of bq having each of values[field] and, when
// buckets is not empty, per bucket (consecutive, of one width), which it
// fills in. Hits without a time are in no bucket.
func (x *Index) tally(ctx context.Context, bq query.Query, values map[string][]string, buckets []Bucket) (map[string]map[string]int, error) {
	parts := make([]tally, len(x.shards))
	errs := make([]error, len(x.shards))
	var wg sync.WaitGroup
	for i, s := range x.shards {
		wg.Go(func() { parts[i], errs[i] = x.shardTally(ctx, s, bq, values, bucketingOf(buckets)) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	terms := make(map[string]map[string]int, len(values))
	for f := range values {
		terms[f] = map[string]int{}
	}
	for _, p := range parts {
		for f, c := range p.terms {
			for v, n := range c {
				terms[f][v] += n
			}
		}
		for b, n := range p.buckets {
			buckets[b].Count += n
		}
	}
	return terms, nil
}

func (x *Index) shardTally(ctx context.Context, s *shard, bq query.Query, values map[string][]string, bk bucketing) (tally, error) {
	var out tally
	ai, err := s.idx.Advanced()
	if err != nil {
		return out, err
	}
	r, err := ai.Reader()
	if err != nil {
		return out, err
	}
	defer r.Close()

	// A hit's internal ID is its number in the reader's snapshot: the
	// segments' documents, deleted ones included, one after the other.
	var segs []*scorch.SegmentSnapshot
	var starts, ends []uint64 // of each segment's numbers
	var hits []*roaring.Bitmap
	if len(values) > 0 {
		snap, ok := r.(*scorch.IndexSnapshot)
		if !ok {
			return out, errNoBitmaps
		}
		segs = snap.Segments()
		starts, ends = make([]uint64, len(segs)), make([]uint64, len(segs))
		var end uint64
		for i, ss := range segs {
			starts[i] = end
			end += ss.Segment().Count()
			ends[i] = end
		}
		hits = make([]*roaring.Bitmap, len(segs))
	}
	var dvr bindex.DocValueReader
	var visit bindex.DocValueVisitor
	if bk.n > 0 {
		out.buckets = make([]int, bk.n)
		if dvr, err = r.DocValueReader([]string{FieldTimeSort}); err != nil {
			return out, err
		}
		visit = func(_ string, term []byte) {
			ns, ok := exactTime(term)
			if !ok || ns < bk.start {
				return
			}
			if b := (ns - bk.start) / bk.width; b < int64(bk.n) {
				out.buckets[b]++
			}
		}
	}

	sr, err := bq.Searcher(ctx, r, x.mapping, search.SearcherOptions{Score: "none"})
	if err != nil {
		return out, err
	}
	defer sr.Close()
	sctx := &search.SearchContext{DocumentMatchPool: search.NewDocumentMatchPool(sr.DocumentMatchPoolSize(), 0)}
	seg := 0
	for n := 0; ; n++ {
		if n%4096 == 0 && ctx.Err() != nil {
			return out, ctx.Err()
		}
		dm, err := sr.Next(sctx)
		if err != nil {
			return out, err
		}
		if dm == nil {
			break
		}
		if dvr != nil {
			if err := dvr.VisitDocValues(dm.IndexInternalID, visit); err != nil {
				return out, err
			}
		}
		if hits != nil {
			num := binary.BigEndian.Uint64(dm.IndexInternalID)
			for seg < len(segs) && num >= ends[seg] {
				seg++
			}
			if seg == len(segs) {
				return out, fmt.Errorf("hit %d beyond the %d documents of the snapshot", num, ends[len(ends)-1])
			}
			if hits[seg] == nil {
				hits[seg] = roaring.New()
			}
			hits[seg].Add(uint32(num - starts[seg]))
		}
		sctx.DocumentMatchPool.Put(dm)
	}

	out.terms = make(map[string]map[string]int, len(values))
	for f, terms := range values {
		out.terms[f] = make(map[string]int, len(terms))
		for i, ss := range segs {
			if hits[i] == nil {
				continue
			}
			dict, err := ss.Segment().Dictionary(f)
			if err != nil {
				return out, err
			}
			for _, t := range terms {
				n, err := intersect(dict, t, hits[i])
				if err != nil {
					return out, err
				}
				out.terms[f][t] += n
			}
		}
	}
	return out, nil
}

// intersect counts the documents of hits having term in dict.
func intersect(dict segment.TermDictionary, term string, hits *roaring.Bitmap) (int, error) {
	pl, err := dict.PostingsList([]byte(term), nil, nil)
	if err != nil {
		return 0, err
	}
	it, ok := pl.Iterator(false, false, false, nil).(segment.OptimizablePostingsIterator)
	if !ok {
		return 0, errNoBitmaps
	}
	if bm := it.ActualBitmap(); bm != nil {
		return int(hits.AndCardinality(bm)), nil
	}
	if num, ok := it.DocNum1Hit(); ok && hits.Contains(uint32(num)) {
		return 1, nil
	}
	return 0, nil
}
