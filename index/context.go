package index

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"
)

// Context is an event with the records around it in the same file.
type Context struct {
	Hit    Hit   `json:"hit"`
	Before []Hit `json:"before"` // oldest first
	After  []Hit `json:"after"`
}

// ErrNotFound is returned for an unknown event ID.
var ErrNotFound = fmt.Errorf("not found")

// Get returns one event by ID.
func (x *Index) Get(ctx context.Context, id string) (Hit, bool, error) {
	return x.get(ctx, id)
}

func (x *Index) get(ctx context.Context, id string) (Hit, bool, error) {
	_, h, ok, err := x.locate(ctx, id)
	return h, ok, err
}

// locate finds a record by its ID's hash, which the catalog holds for
// every record: the blocks with a record of that hash are read.
func (x *Index) locate(ctx context.Context, id string) (recordRef, Hit, bool, error) {
	h32 := idHash(id)
	for _, s := range x.shards {
		if err := ctxErr(ctx); err != nil {
			return recordRef{}, Hit{}, false, err
		}
		s.mu.RLock()
		blocks := s.blocks
		s.mu.RUnlock()
		for i, m := range blocks {
			if i%4096 == 0 && ctxErr(ctx) != nil {
				return recordRef{}, Hit{}, false, ctxErr(ctx)
			}
			if !slices.Contains(m.ids, h32) {
				continue
			}
			if ref, h, ok, err := s.findIn(m, h32, id); err != nil || ok {
				return ref, h, ok, err
			}
		}
	}
	return recordRef{}, Hit{}, false, nil
}

// Context returns the n records before and after the event id in its file
// (same node and file), in file order: grep -C for records.
func (x *Index) Context(ctx context.Context, id string, n int) (Context, error) {
	ctx, cancel := x.withDeadline(ctx)
	defer cancel()
	c, err := x.context(ctx, id, n)
	if err != nil {
		return Context{}, x.deadlineError(ctx, err)
	}
	return c, nil
}

func (x *Index) context(ctx context.Context, id string, n int) (Context, error) {
	if err := ctxErr(ctx); err != nil {
		return Context{}, err
	}
	h, ok, err := x.get(ctx, id)
	if err != nil {
		return Context{}, err
	}
	if !ok {
		if err := ctxErr(ctx); err != nil {
			return Context{}, err
		}
		return Context{}, fmt.Errorf("context: %w: %s", ErrNotFound, id)
	}
	c := Context{Hit: h, Before: []Hit{}, After: []Hit{}}
	if n <= 0 {
		return c, nil
	}
	n = min(n, 1000)
	vs, err := x.views()
	if err != nil {
		return Context{}, err
	}
	defer closeViews(vs)
	// The records of the file are in its blocks, in any shard and order:
	// the catalog's line numbers say which are nearest, and only their
	// blocks are read.
	type near struct {
		v    *view
		b, r int
		line int32
	}
	var before, after []near
	line := int32(min(max(h.Line, 0), 1<<31-1))
	for _, v := range vs {
		// Every file of the node at the path (a rotated file's successor
		// has another file ID).
		same := make([]bool, len(v.keys))
		any := false
		for i, k := range v.keys {
			same[i] = k.Node == h.Node && k.File == h.File
			any = any || same[i]
		}
		if !any {
			continue
		}
		for bi, b := range v.blocks {
			if !same[b.key] {
				continue
			}
			live := b.live()
			for r, l := range b.lines {
				if live&(1<<r) == 0 {
					continue
				}
				switch {
				case l < line:
					before = append(before, near{v, bi, r, l})
				case l > line:
					after = append(after, near{v, bi, r, l})
				}
			}
		}
	}
	if err := ctxErr(ctx); err != nil {
		return Context{}, err
	}
	// The n nearest lines on each side, and every record on the last of
	// them (several files on one path share line numbers).
	nearest := func(ns []near, below bool) []near {
		slices.SortFunc(ns, func(a, b near) int {
			if below {
				return cmp.Compare(b.line, a.line)
			}
			return cmp.Compare(a.line, b.line)
		})
		k := min(n, len(ns))
		for k < len(ns) && k > 0 && ns[k].line == ns[k-1].line {
			k++
		}
		return ns[:k]
	}
	read := func(ns []near) ([]Hit, error) {
		out := make([]Hit, 0, len(ns))
		for _, p := range ns {
			recs, err := p.v.sh.records(p.v.blocks[p.b])
			if err != nil {
				return nil, fmt.Errorf("context of %s: %w", id, err)
			}
			if recs[p.r].ID != h.ID {
				out = append(out, recs[p.r])
			}
		}
		slices.SortFunc(out, func(a, b Hit) int { return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Offset, b.Offset)) })
		return out, nil
	}
	b, err := read(nearest(before, true))
	if err != nil {
		return Context{}, err
	}
	a, err := read(nearest(after, false))
	if err != nil {
		return Context{}, err
	}
	c.Before = b[max(len(b)-n, 0):]
	c.After = a[:min(n, len(a))]
	return c, nil
}

// Bounds returns the times of the oldest and newest events, from the
// catalog.
func (x *Index) Bounds(ctx context.Context) (lo, hi time.Time, err error) {
	var l, h int64
	found := false
	for _, s := range x.shards {
		s.mu.RLock()
		blocks := s.blocks
		s.mu.RUnlock()
		for _, b := range blocks {
			if b.timed == 0 {
				continue
			}
			if !found || b.minT < l {
				l = b.minT
			}
			if !found || b.maxT > h {
				h = b.maxT
			}
			found = true
		}
	}
	if !found {
		return lo, hi, nil
	}
	return time.Unix(0, l).UTC(), time.Unix(0, h).UTC(), nil
}
