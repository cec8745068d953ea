package index

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/numeric"
)

// Bounds returns the times of the oldest and newest events. The index's
// bounds are read once from the term dictionaries (see searchBounds) and
// then kept up to date by Add.
func (x *Index) Bounds(ctx context.Context) (lo, hi time.Time, err error) {
	x.boundsMu.Lock()
	defer x.boundsMu.Unlock()
	if !x.boundsKnown {
		lo, hi, err := x.searchBounds(ctx)
		if err != nil {
			return lo, hi, err
		}
		x.widenBoundsLocked(lo)
		x.widenBoundsLocked(hi)
		x.boundsKnown = true
	}
	return x.lo, x.hi, nil
}

// widenBounds records an added event's time.
func (x *Index) widenBounds(t time.Time) {
	if t.IsZero() {
		return
	}
	x.boundsMu.Lock()
	x.widenBoundsLocked(t)
	x.boundsMu.Unlock()
}

func (x *Index) widenBoundsLocked(t time.Time) {
	if t.IsZero() {
		return
	}
	if x.lo.IsZero() || t.Before(x.lo) {
		x.lo = t
	}
	if x.hi.IsZero() || t.After(x.hi) {
		x.hi = t
	}
}

// searchBounds finds the oldest and newest event times in the term
// dictionaries, not in the documents: sorting every document by time to
// find them cost seconds on millions of events. Each width of the time
// buckets narrows the search to one bucket (the first for lo, the last for
// hi), so it reads at most 64 terms a level, then the exact times inside
// the finest bucket.
func (x *Index) searchBounds(context.Context) (lo, hi time.Time, err error) {
	var l, h int64
	found := false
	for _, s := range x.shards {
		sl, sh, ok, err := dictBounds(s.idx)
		if err != nil {
			return lo, hi, fmt.Errorf("index time bounds: shard %d: %w", s.n, err)
		}
		if !ok {
			continue
		}
		if !found || sl < l {
			l = sl
		}
		if !found || sh > h {
			h = sh
		}
		found = true
	}
	if !found {
		return lo, hi, nil
	}
	return time.Unix(0, l).UTC(), time.Unix(0, h).UTC(), nil
}

// dictBounds returns the smallest and largest time of idx's dictionaries;
// ok is false when it holds no timed event. Terms of replaced documents may
// linger until a merge, but a replaced record has the same time.
func dictBounds(idx bleve.Index) (lo, hi int64, ok bool, err error) {
	edge := func(last bool) (int64, bool, error) {
		a, b := uint64(0), uint64(math.MaxUint64)
		for level := len(timeShifts) - 1; level >= -1; level-- {
			field, s := FieldTimeSort, uint(0)
			if level >= 0 {
				field, s = FieldTime, timeShifts[level]
			}
			term, found, err := dictEdge(idx, field, termOf(a, s), termOf(b, s), last)
			if err != nil || !found {
				return 0, false, err
			}
			v, err := numeric.PrefixCoded(term).Int64()
			if err != nil {
				return 0, false, fmt.Errorf("time term %x: %w", term, err)
			}
			a = sortable(v)
			b = a | (uint64(1)<<s - 1)
		}
		return int64(a ^ 1<<63), true, nil
	}
	if lo, ok, err = edge(false); err != nil || !ok {
		return 0, 0, false, err
	}
	hi, ok, err = edge(true)
	return lo, hi, ok, err
}

// dictEdge returns the first (or last) term of field in [from, to].
func dictEdge(idx bleve.Index, field, from, to string, last bool) (string, bool, error) {
	d, err := idx.FieldDictRange(field, []byte(from), []byte(to))
	if err != nil {
		return "", false, err
	}
	defer d.Close()
	var term string
	found := false
	for {
		e, err := d.Next()
		if err != nil {
			return "", false, err
		}
		if e == nil {
			break
		}
		term, found = e.Term, true
		if !last {
			break
		}
	}
	return term, found, nil
}
