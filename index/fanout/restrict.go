package fanout

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/index"
)

// Restrict returns s seeing only the events of the partitions owned
// returns at each request: what an analyzer answers for in a fan-out (its
// index may still hold partitions it owned before). Findings and Stats
// are s's. reindexing (nil: none) names the owned partitions its index
// does not hold in full yet (a partition just taken over): an answer
// covers (Result.Covered) the others and says these are missing.
func Restrict(s index.Searcher, owned func() []int, reindexing func() []index.Gap) index.Searcher {
	if reindexing == nil {
		reindexing = func() []index.Gap { return nil }
	}
	return &restricted{s: s, owned: owned, reindexing: reindexing}
}

type restricted struct {
	s          index.Searcher
	owned      func() []int
	reindexing func() []index.Gap
}

// partitions are the owned ones among ps (nil: all owned); never nil, so
// that owning none finds nothing.
func (r *restricted) partitions(owned, ps []int) []int {
	out := []int{}
	for _, p := range owned {
		if ps == nil || slices.Contains(ps, p) {
			out = append(out, p)
		}
	}
	return out
}

func (r *restricted) Search(ctx context.Context, q index.Query) (index.Result, error) {
	owned := r.owned()
	q.Partitions = r.partitions(owned, q.Partitions)
	res, err := r.s.Search(ctx, q)
	if err != nil {
		return res, err
	}
	gaps := r.reindexing()
	res.Covered = []int{}
	for _, p := range q.Partitions {
		if !slices.ContainsFunc(gaps, func(g index.Gap) bool { return g.Partition == p }) {
			res.Covered = append(res.Covered, p)
		}
	}
	for _, g := range gaps {
		if slices.Contains(q.Partitions, g.Partition) {
			res.Missing = append(res.Missing, g)
		}
	}
	return res, nil
}

// Context is that of an event of an owned partition (the records around
// it are of its file, so of its partition too).
func (r *restricted) Context(ctx context.Context, id string, n int) (index.Context, error) {
	c, err := r.s.Context(ctx, id, n)
	if err == nil && !slices.Contains(r.owned(), c.Hit.Partition) {
		return index.Context{}, fmt.Errorf("context: %w: %s (of partition %d, not owned here)", index.ErrNotFound, id, c.Hit.Partition)
	}
	return c, err
}

// Bounds are those of the owned partitions' events, found by searching
// (the index's own bounds are of all it holds).
func (r *restricted) Bounds(ctx context.Context) (lo, hi time.Time, err error) {
	return boundsBySearch(ctx, r)
}

func (r *restricted) DocCount() (uint64, error) {
	res, err := r.Search(context.Background(), index.Query{Size: -1})
	if err != nil {
		return 0, fmt.Errorf("count of owned partitions: %w", err)
	}
	return res.Total, nil
}

func (r *restricted) Findings() []finding.Finding { return r.s.Findings() }
func (r *restricted) Stats() index.Stats          { return r.s.Stats() }

// boundsBySearch finds the oldest and newest event times of s by two
// searches of one hit, oldest and newest first, side by side (hits without
// a time come last in both).
func boundsBySearch(ctx context.Context, s index.Searcher) (lo, hi time.Time, err error) {
	var errs [2]error
	edge := func(sort string, t *time.Time, err *error) {
		res, e := s.Search(ctx, index.Query{Size: 1, Sort: sort})
		if e != nil {
			*err = fmt.Errorf("time bounds: %w", e)
		} else if len(res.Hits) > 0 {
			*t = res.Hits[0].Time
		}
	}
	var wg sync.WaitGroup
	wg.Go(func() { edge("time", &lo, &errs[0]) })
	edge("-time", &hi, &errs[1])
	wg.Wait()
	if err := errors.Join(errs[:]...); err != nil {
		return time.Time{}, time.Time{}, err
	}
	return lo, hi, nil
}
