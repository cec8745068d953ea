package index

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strings"
	"sync"
	"time"
)

// Query is a search: what the user typed plus structured filters.
type Query struct {
	Text string `json:"q"` // see QuerySyntax; empty matches everything
	// Filters: values of one field are OR-ed, fields are AND-ed.
	Nodes      []string  `json:"node,omitempty"`
	Containers []string  `json:"container,omitempty"`
	Sources    []string  `json:"source,omitempty"`
	Levels     []string  `json:"level,omitempty"`
	Files      []string  `json:"file,omitempty"`
	Since      time.Time `json:"since,omitzero"` // inclusive
	Until      time.Time `json:"until,omitzero"` // exclusive
	From       int       `json:"from,omitempty"`
	Size       int       `json:"size,omitempty"` // default 50, at most 10000; negative: no hits
	// Sort: "-time" (newest first, the default), "time", or "score".
	Sort string `json:"sort,omitempty"`
	// Facets asks for term counts of node, container, source and level.
	Facets bool `json:"facets,omitempty"`
	// Histogram asks for this many time buckets over [Since, Until), or
	// over the whole index's time span when those are unset.
	Histogram int `json:"histogram,omitempty"`
	// HistogramSince and HistogramUntil, when set, stand for the index's
	// time span where Since or Until is unset: the histogram's range, not
	// a filter. A fan-out passes the span of all its indexes, so that
	// every index cuts the same buckets.
	HistogramSince time.Time `json:"histogram_since,omitzero"`
	HistogramUntil time.Time `json:"histogram_until,omitzero"`
	Highlight      bool      `json:"highlight,omitempty"`
	// After is the Next cursor of the previous page: the page after it,
	// however deep (From must be 0 with it).
	After string `json:"after,omitempty"`
	// Partitions: nil, every event; else only the events of these stream
	// partitions (empty: none). It filters hits, counts, facets and the
	// histogram alike; a cursor stays valid when it changes (see
	// queryHash). Set by the server (fanout.Restrict), never read from a
	// client.
	Partitions []int `json:"-"`
}

// Hit is one event found.
type Hit struct {
	ID        string            `json:"id"`
	Time      time.Time         `json:"time,omitzero"`
	Cluster   string            `json:"cluster,omitempty"`
	Node      string            `json:"node"`
	Container string            `json:"container"`
	File      string            `json:"file"`
	Line      int               `json:"line"`
	Lines     int               `json:"lines,omitempty"`
	Offset    int64             `json:"offset"`
	Stream    string            `json:"stream,omitempty"`
	Source    string            `json:"source"`
	Level     string            `json:"level"`
	Component string            `json:"component,omitempty"`
	Process   string            `json:"process,omitempty"`
	PID       int               `json:"pid,omitempty"`
	Rank      *int              `json:"rank,omitempty"`
	IP        string            `json:"ip,omitempty"`
	Cause     string            `json:"cause,omitempty"`
	Fields    map[string]string `json:"fields,omitempty"`
	Message   string            `json:"message"`
	// Highlights are the matched ranges of Message as [start, end) byte
	// offsets, sorted and non-overlapping. Clients render them as marks
	// around text nodes; no HTML ever comes from the index.
	Highlights [][2]int `json:"highlights,omitempty"`
	Score      float64  `json:"score,omitempty"`
	// Partition is the stream partition of the event (0 outside cluster
	// mode).
	Partition int `json:"partition,omitempty"`
}

// FacetTerm is a value of a facet field and how many hits have it.
type FacetTerm struct {
	Term  string `json:"term"`
	Count int    `json:"count"`
}

// Bucket is one bar of the time histogram: [Start, End).
type Bucket struct {
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	Count int       `json:"count"`
}

// Result is the answer to a Query.
type Result struct {
	Total     uint64                 `json:"total"`
	Took      time.Duration          `json:"took_ns"`
	Hits      []Hit                  `json:"hits"`
	Facets    map[string][]FacetTerm `json:"facets,omitempty"`
	Histogram []Bucket               `json:"histogram,omitempty"`
	// Errors is kept for clients of earlier versions: a shard that fails
	// now fails the whole search, so it is always empty.
	Errors []string `json:"errors,omitempty"`
	// Next is the cursor of the page after this one (Query.After); empty
	// on the last page.
	Next string `json:"next,omitempty"`
	// Partial names the searchers of a fan-out (analyzers) that did not
	// answer, and why: the hits and counts are those of the others.
	Partial []string `json:"partial,omitempty"`
	// Covered is, in a cluster member's answer (fanout.Restrict), the
	// partitions it holds every event of; a fan-out names the others in
	// Missing. Nil outside cluster mode.
	Covered []int `json:"covered,omitempty"`
	// Missing are the partitions of the stream whose events are absent
	// from this answer, in full or in part, and why (a take-over: nobody
	// owns them yet, or their new owner is still indexing them); each is
	// in Partial too. MissingShare is the share of the stream's messages
	// they hold (0 to 1): how much the counts may fall short.
	Missing      []Gap   `json:"missing,omitempty"`
	MissingShare float64 `json:"missing_share,omitempty"`
}

// Gap is a partition a search result lacks events of.
type Gap struct {
	Partition int    `json:"partition"`
	Reason    string `json:"reason"` // GapUnowned, GapReindexing, GapNoAnswer
	// Owner is the member that holds (or held) it, when known.
	Owner string `json:"owner,omitempty"`
	// Messages are the partition's stream messages the answer lacks, as
	// far as known (0: not known; the fan-out then counts the whole
	// partition).
	Messages uint64 `json:"messages,omitempty"`
}

// Why a partition is missing from a result.
const (
	GapUnowned    = "unowned"     // no member holds its lease (a take-over under way)
	GapReindexing = "re-indexing" // its owner is still indexing it
	GapNoAnswer   = "no answer"   // its owner did not answer the search
)

// FacetFields are the fields Query.Facets counts.
var FacetFields = []string{FieldNode, FieldContainer, FieldSource, FieldLevel}

// facetSize is the number of terms returned per facet field.
const facetSize = 50

// queryNode is the expression of q: its text AND its filters.
func queryNode(q Query) (node, error) {
	text, err := parseText(q.Text)
	if err != nil {
		return nil, err
	}
	parts := []node{text}
	filter := func(field string, vals []string) {
		var alts []node
		for _, v := range vals {
			if v == "" {
				continue
			}
			if lowerCaseFields[field] {
				v = strings.ToLower(v)
			}
			alts = append(alts, kwNode{field: field, value: v})
		}
		if len(alts) > 0 {
			parts = append(parts, orOf(alts...))
		}
	}
	filter(FieldNode, q.Nodes)
	filter(FieldContainer, q.Containers)
	filter(FieldSource, q.Sources)
	filter(FieldLevel, q.Levels)
	filter(FieldFile, q.Files)
	if !q.Since.IsZero() || !q.Until.IsZero() {
		parts = append(parts, timeRange(q.Since, q.Until))
	}
	if q.Partitions != nil {
		if len(q.Partitions) == 0 {
			return noneNode{}, nil
		}
		parts = append(parts, partNode{parts: slices.Clone(q.Partitions)})
	}
	return andOf(parts...), nil
}

// Search runs q over all shards, within the search timeout and until ctx
// ends (an HTTP client that went away). Any shard's error fails the
// search: a page is never cut short silently.
func (x *Index) Search(ctx context.Context, q Query) (Result, error) {
	ctx, cancel := x.withDeadline(ctx)
	defer cancel()
	res, err := x.search(ctx, q)
	if err != nil {
		return Result{}, x.deadlineError(ctx, err)
	}
	return res, nil
}

// found is the hits of one shard: a mask per block of its view.
type found struct {
	v    *view
	hits []uint64
	// leaves are the masks of the query's scored leaves (sort=score).
	leaves [][]uint64
}

// views opens a view of every shard; close them with closeViews.
func (x *Index) views() ([]*view, error) {
	vs := make([]*view, 0, len(x.shards))
	for _, s := range x.shards {
		v, err := s.view()
		if err != nil {
			closeViews(vs)
			return nil, err
		}
		vs = append(vs, v)
	}
	return vs, nil
}

func closeViews(vs []*view) {
	for _, v := range vs {
		v.close()
	}
}

// find evaluates root on every view in parallel.
func (x *Index) find(ctx context.Context, vs []*view, root node, scored []node) ([]found, error) {
	out := make([]found, len(vs))
	errs := make([]error, len(vs))
	var wg sync.WaitGroup
	for i, v := range vs {
		wg.Go(func() {
			p := &plan{ctx: ctx, v: v}
			s, err := p.eval(root)
			if err == nil {
				err = p.verify(root, &s)
			}
			if err != nil {
				errs[i] = fmt.Errorf("shard %d: %w", v.sh.n, err)
				return
			}
			for j, b := range v.blocks {
				s.sure[j] &= b.live()
			}
			out[i] = found{v: v, hits: s.sure}
			for _, leaf := range scored {
				ls, err := p.eval(leaf)
				if err != nil {
					errs[i] = fmt.Errorf("shard %d: %w", v.sh.n, err)
					return
				}
				m := ls.sure
				if ls.maybe != nil {
					for j := range m {
						m[j] |= ls.maybe[j]
					}
				}
				out[i].leaves = append(out[i].leaves, m)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if IsBadQuery(err) {
			return nil, errors.Unwrap(err) // the query's fault, the same in every shard
		}
	}
	if err := errors.Join(errs...); err != nil {
		if err := ctxErr(ctx); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("search: %w", err)
	}
	return out, nil
}

func (x *Index) search(ctx context.Context, q Query) (Result, error) {
	start := time.Now()
	root, err := queryNode(q)
	if err != nil {
		return Result{}, err
	}
	size, err := PageSize(q)
	if err != nil {
		return Result{}, err
	}
	var after *cursor
	if q.After != "" && size > 0 { // counts alone (the timeline's) have no page to start
		if after, err = decodeCursor(q.After, q); err != nil {
			return Result{}, err
		}
	}
	vs, err := x.views()
	if err != nil {
		return Result{}, err
	}
	defer closeViews(vs)
	var scored []node
	if q.Sort == "score" && size > 0 {
		scored = scoredLeaves(root)
	}
	fs, err := x.find(ctx, vs, root, scored)
	if err != nil {
		return Result{}, err
	}
	res := Result{Hits: []Hit{}}
	for _, f := range fs {
		for _, m := range f.hits {
			res.Total += uint64(bits.OnesCount64(m))
		}
	}
	if q.Facets {
		res.Facets = facets(fs)
	}
	if q.Histogram > 0 {
		lo, hi := orTime(q.Since, q.HistogramSince), orTime(q.Until, q.HistogramUntil)
		if lo.IsZero() || hi.IsZero() {
			blo, bhi := boundsOf(vs)
			if lo.IsZero() {
				lo = blo
			}
			if hi.IsZero() {
				hi = bhi.Add(time.Nanosecond)
			}
		}
		res.Histogram = makeBuckets(lo, hi, q.Histogram)
		histogram(fs, res.Histogram)
	}
	if size > 0 && res.Total > 0 {
		from := max(q.From, 0)
		var page []pageHit
		if q.Sort == "score" {
			page, err = x.scorePage(ctx, fs, after, from+size+1)
		} else {
			page, err = x.timePage(ctx, fs, after, from+size+1, q.Sort != "time")
		}
		if err != nil {
			return Result{}, err
		}
		page = page[min(from, len(page)):]
		hits := make([]Hit, 0, min(len(page), size+1))
		for _, ph := range page {
			h, err := ph.hit(fs)
			if err != nil {
				return Result{}, err
			}
			hits = append(hits, h)
		}
		if len(hits) > size {
			hits = hits[:size]
			last := hits[size-1]
			if q.Sort == "score" {
				res.Next = scoreCursor(q, last).encode()
			} else {
				res.Next = timeCursor(q, hits).encode()
			}
		}
		ArrangePage(q, hits)
		if q.Highlight {
			text, _ := parseText(q.Text)
			for i := range hits {
				hits[i].Highlights = highlightRanges(text, &hits[i])
			}
		}
		res.Hits = hits
	}
	res.Took = time.Since(start)
	return res, nil
}

// PageSize returns the number of hits q asks for (0: counts only), or the
// error of a page that cannot be had: a bad sort, a page past
// MaxResultWindow, From with a cursor. A fan-out checks the page with it
// before asking its members for theirs.
func PageSize(q Query) (int, error) {
	switch q.Sort {
	case "", "-time", "time", "score":
	default:
		return 0, fmt.Errorf("search: bad sort %q (want -time, time or score)", q.Sort)
	}
	size := q.Size
	switch {
	case size < 0:
		return 0, nil // counts, facets and histogram only
	case size == 0:
		size = 50
	}
	size = min(size, 10000)
	from := max(q.From, 0)
	if from+size > MaxResultWindow {
		return 0, fmt.Errorf("%w: from %d + size %d is past the first %d hits; page on with after=CURSOR (the next value of the previous page), or narrow the query (a time range, filters)",
			ErrTooDeep, from, size, MaxResultWindow)
	}
	if q.After != "" && from > 0 {
		return 0, fmt.Errorf("%w: from and after together (after already says where the page starts)", ErrBadCursor)
	}
	return size, nil
}

// facets counts the hits per node, container, source and level.
func facets(fs []found) map[string][]FacetTerm {
	counts := map[string]map[string]int{}
	for _, f := range FacetFields {
		counts[f] = map[string]int{}
	}
	for _, f := range fs {
		for i, m := range f.hits {
			if m == 0 {
				continue
			}
			b := f.v.blocks[i]
			n := bits.OnesCount64(m)
			k := f.v.keys[b.key]
			if k.Node != "" {
				counts[FieldNode][k.Node] += n
			}
			if k.Container != "" {
				counts[FieldContainer][k.Container] += n
			}
			for _, vm := range b.levels {
				if c := bits.OnesCount64(m & vm.mask); c > 0 {
					counts[FieldLevel][f.v.vals[vm.v]] += c
				}
			}
			for _, vm := range b.sources {
				if c := bits.OnesCount64(m & vm.mask); c > 0 {
					counts[FieldSource][f.v.vals[vm.v]] += c
				}
			}
		}
	}
	out := make(map[string][]FacetTerm, len(FacetFields))
	for field, c := range counts {
		terms := make([]FacetTerm, 0, len(c))
		for v, n := range c {
			terms = append(terms, FacetTerm{Term: v, Count: n})
		}
		out[field] = topTerms(terms)
	}
	return out
}

// histogram counts the timed hits into buckets (consecutive, of one
// width).
func histogram(fs []found, buckets []Bucket) {
	if len(buckets) == 0 {
		return
	}
	start := timeNanos(buckets[0].Start)
	width := buckets[0].End.Sub(buckets[0].Start).Nanoseconds()
	end := timeNanos(buckets[len(buckets)-1].End)
	for _, f := range fs {
		for i, m := range f.hits {
			b := f.v.blocks[i]
			m &= b.timed
			if m == 0 || b.maxT < start || b.minT >= end {
				continue
			}
			for m != 0 {
				r := bits.TrailingZeros64(m)
				m &= m - 1
				t := b.times[r]
				if t < start || t >= end {
					continue
				}
				if k := (t - start) / width; k < int64(len(buckets)) {
					buckets[k].Count++
				}
			}
		}
	}
}

// orTime is t, or else when t is zero.
func orTime(t, orElse time.Time) time.Time {
	if t.IsZero() {
		return orElse
	}
	return t
}

// makeBuckets splits [lo, hi) into n buckets of a round width.
func makeBuckets(lo, hi time.Time, n int) []Bucket {
	if lo.IsZero() || hi.IsZero() || !hi.After(lo) || n <= 0 {
		return nil
	}
	n = min(n, 500)
	w := hi.Sub(lo) / time.Duration(n)
	// Round the width up to a step people read easily.
	for _, s := range []time.Duration{time.Millisecond, 10 * time.Millisecond, 100 * time.Millisecond, time.Second,
		5 * time.Second, 10 * time.Second, 30 * time.Second, time.Minute, 5 * time.Minute, 10 * time.Minute,
		30 * time.Minute, time.Hour, 6 * time.Hour, 24 * time.Hour} {
		if w <= s {
			w = s
			break
		}
	}
	start := lo.Truncate(w)
	var out []Bucket
	for t := start; t.Before(hi) && len(out) < 1000; t = t.Add(w) {
		out = append(out, Bucket{Start: t, End: t.Add(w)})
	}
	return out
}

// pageHit is a hit being ordered: where it is, its sort key, and its ID
// once read (ties are ordered by it).
type pageHit struct {
	f, b, r int // found, block, record
	timed   bool
	t       int64
	score   float64
	id      string
}

func (p *pageHit) hit(fs []found) (Hit, error) {
	v := fs[p.f].v
	hits, err := v.sh.records(v.blocks[p.b])
	if err != nil {
		return Hit{}, err
	}
	if p.r >= len(hits) {
		return Hit{}, fmt.Errorf("chunk store: block %d has no record %d", v.blocks[p.b].seq, p.r)
	}
	h := hits[p.r]
	h.Score = p.score
	return h, nil
}

// readIDs fills in the IDs of hs.
func readIDs(fs []found, hs []pageHit) error {
	for i := range hs {
		if hs[i].id != "" {
			continue
		}
		v := fs[hs[i].f].v
		recs, err := v.sh.records(v.blocks[hs[i].b])
		if err != nil {
			return err
		}
		hs[i].id = recs[hs[i].r].ID
	}
	return nil
}

// timePage returns the first need hits in time order (newest first when
// newest), after the cursor c when not nil: the hits with a time by time,
// ties by ID, then those without a time by ID. Blocks are visited in the
// order of their time bounds, so that a page usually reads a few blocks'
// times, not every hit's.
func (x *Index) timePage(ctx context.Context, fs []found, c *cursor, need int, newest bool) ([]pageHit, error) {
	// better reports whether time a comes before b in the page's order.
	better := func(a, b int64) bool {
		if newest {
			return a > b
		}
		return a < b
	}
	type blk struct{ f, b int }
	var blocks []blk
	for fi, f := range fs {
		for bi, m := range f.hits {
			if m&f.v.blocks[bi].timed != 0 {
				blocks = append(blocks, blk{fi, bi})
			}
		}
	}
	var timed []pageHit
	if c == nil || c.Timed {
		// The hits at the cursor's time follow it only by ID: those first.
		if c != nil {
			var tied []pageHit
			for _, k := range blocks {
				b := fs[k.f].v.blocks[k.b]
				if b.minT > c.NS || b.maxT < c.NS {
					continue
				}
				for m := fs[k.f].hits[k.b] & b.timed; m != 0; m &= m - 1 {
					if r := bits.TrailingZeros64(m); b.times[r] == c.NS {
						tied = append(tied, pageHit{f: k.f, b: k.b, r: r, timed: true, t: c.NS})
					}
				}
			}
			if err := readIDs(fs, tied); err != nil {
				return nil, err
			}
			timed = slices.DeleteFunc(tied, func(h pageHit) bool { return h.id <= c.ID })
		}
		bound := func(k blk) int64 {
			b := fs[k.f].v.blocks[k.b]
			if newest {
				return b.maxT
			}
			return b.minT
		}
		slices.SortFunc(blocks, func(a, b blk) int {
			if newest {
				return cmp.Compare(bound(b), bound(a))
			}
			return cmp.Compare(bound(a), bound(b))
		})
		var limit int64 // the need-th best time once need hits are in
		haveLimit := false
		for n, k := range blocks {
			if n%256 == 0 && ctxErr(ctx) != nil {
				return nil, ctxErr(ctx)
			}
			if haveLimit && better(limit, bound(k)) {
				break // this block and the rest hold nothing as good
			}
			b := fs[k.f].v.blocks[k.b]
			for m := fs[k.f].hits[k.b] & b.timed; m != 0; m &= m - 1 {
				r := bits.TrailingZeros64(m)
				t := b.times[r]
				if c != nil && (t == c.NS || better(t, c.NS)) {
					continue // at or before the cursor's time
				}
				timed = append(timed, pageHit{f: k.f, b: k.b, r: r, timed: true, t: t})
			}
			if len(timed) >= need && (!haveLimit || len(timed) > 4*need) {
				limit, haveLimit = nthTime(timed, need, better), true
				timed = keepTimes(timed, limit, better)
			}
		}
		// Time order; ties need their IDs.
		slices.SortStableFunc(timed, func(a, b pageHit) int {
			switch {
			case a.t == b.t:
				return 0
			case better(a.t, b.t):
				return -1
			}
			return 1
		})
		for i := 0; i < len(timed) && i < need; {
			j := i + 1
			for j < len(timed) && timed[j].t == timed[i].t {
				j++
			}
			if j-i > 1 {
				if err := readIDs(fs, timed[i:j]); err != nil {
					return nil, err
				}
				slices.SortFunc(timed[i:j], func(a, b pageHit) int { return strings.Compare(a.id, b.id) })
			}
			i = j
		}
	}
	out := timed[:min(len(timed), need)]
	if len(out) == need {
		return out, nil
	}
	// The hits without a time come last, by ID.
	var untimed []pageHit
	for fi, f := range fs {
		for bi, m := range f.hits {
			for u := m &^ f.v.blocks[bi].timed; u != 0; u &= u - 1 {
				untimed = append(untimed, pageHit{f: fi, b: bi, r: bits.TrailingZeros64(u)})
			}
		}
	}
	if err := readIDs(fs, untimed); err != nil {
		return nil, err
	}
	if c != nil && !c.Timed {
		untimed = slices.DeleteFunc(untimed, func(h pageHit) bool { return h.id <= c.ID })
	}
	slices.SortFunc(untimed, func(a, b pageHit) int { return strings.Compare(a.id, b.id) })
	return append(out, untimed[:min(len(untimed), need-len(out))]...), nil
}

// nthTime is the need-th best time of hs.
func nthTime(hs []pageHit, need int, better func(a, b int64) bool) int64 {
	ts := make([]int64, len(hs))
	for i, h := range hs {
		ts[i] = h.t
	}
	slices.SortFunc(ts, func(a, b int64) int {
		switch {
		case a == b:
			return 0
		case better(a, b):
			return -1
		}
		return 1
	})
	return ts[min(need, len(ts))-1]
}

// keepTimes keeps the hits at least as good as limit (its ties included).
func keepTimes(hs []pageHit, limit int64, better func(a, b int64) bool) []pageHit {
	return slices.DeleteFunc(hs, func(h pageHit) bool { return better(limit, h.t) })
}

// scoredLeaves are the positive text clauses of a query: a hit scores by
// those it matches.
func scoredLeaves(n node) []node {
	var out []node
	positiveLeaves(n, func(n node) {
		switch n := n.(type) {
		case termNode, phraseNode, fuzzyNode:
			out = append(out, n)
		case *patternNode:
			if n.field == FieldMessage {
				out = append(out, n)
			}
		}
	})
	return out
}

// positiveLeaves calls fn with each leaf of n that is not under a NOT (an
// even number of them): the clauses a matching record shows.
func positiveLeaves(n node, fn func(node)) {
	var walk func(n node, neg bool)
	walk = func(n node, neg bool) {
		switch n := n.(type) {
		case andNode:
			for _, k := range n.kids {
				walk(k, neg)
			}
		case orNode:
			for _, k := range n.kids {
				walk(k, neg)
			}
		case notNode:
			walk(n.kid, !neg)
		default:
			if !neg {
				fn(n)
			}
		}
	}
	walk(n, false)
}

// scorePage returns the first need hits by score (the inverse document
// frequency of each scored clause a hit matches, summed), then newest
// first, then by ID, after the cursor c when not nil.
func (x *Index) scorePage(ctx context.Context, fs []found, c *cursor, need int) ([]pageHit, error) {
	// idf of each leaf over all shards.
	var total float64
	nLeaves := 0
	if len(fs) > 0 {
		nLeaves = len(fs[0].leaves)
	}
	df := make([]float64, nLeaves)
	for _, f := range fs {
		for _, b := range f.v.blocks {
			total += float64(b.n)
		}
		for l, m := range f.leaves {
			for _, w := range m {
				df[l] += float64(bits.OnesCount64(w))
			}
		}
	}
	idf := make([]float64, nLeaves)
	for l := range idf {
		idf[l] = math.Log(1 + total/(1+df[l]))
	}
	var ck timeKey
	if c != nil {
		ck = timeOfKey(c.TimeKey)
	}
	// key order: score desc, then timed newest first, untimed last.
	cmpKey := func(sa float64, ka timeKey, sb float64, kb timeKey) int {
		if sa != sb {
			return cmp.Compare(sb, sa)
		}
		if ka.timed != kb.timed {
			if ka.timed {
				return -1
			}
			return 1
		}
		return cmp.Compare(kb.ns, ka.ns)
	}
	var all []pageHit
	for fi, f := range fs {
		if fi%4 == 0 && ctxErr(ctx) != nil {
			return nil, ctxErr(ctx)
		}
		for bi, m := range f.hits {
			b := f.v.blocks[bi]
			for ; m != 0; m &= m - 1 {
				r := bits.TrailingZeros64(m)
				bit := uint64(1) << r
				var s float64
				for l, lm := range f.leaves {
					if lm[bi]&bit != 0 {
						s += idf[l]
					}
				}
				h := pageHit{f: fi, b: bi, r: r, score: s, timed: b.timed&bit != 0, t: b.times[r]}
				if c != nil && cmpKey(h.score, timeKey{h.timed, h.t}, c.Score, ck) < 0 {
					continue // before the cursor
				}
				all = append(all, h)
			}
		}
	}
	if c != nil {
		var tied []pageHit
		for _, h := range all {
			if cmpKey(h.score, timeKey{h.timed, h.t}, c.Score, ck) == 0 {
				tied = append(tied, h)
			}
		}
		if err := readIDs(fs, tied); err != nil {
			return nil, err
		}
		ids := map[[3]int]string{}
		for _, h := range tied {
			ids[[3]int{h.f, h.b, h.r}] = h.id
		}
		all = slices.DeleteFunc(all, func(h pageHit) bool {
			id, ok := ids[[3]int{h.f, h.b, h.r}]
			return ok && id <= c.ID
		})
	}
	slices.SortFunc(all, func(a, b pageHit) int {
		return cmpKey(a.score, timeKey{a.timed, a.t}, b.score, timeKey{b.timed, b.t})
	})
	for i := 0; i < len(all) && i < need; {
		j := i + 1
		for j < len(all) && cmpKey(all[j].score, timeKey{all[j].timed, all[j].t}, all[i].score, timeKey{all[i].timed, all[i].t}) == 0 {
			j++
		}
		if j-i > 1 {
			if err := readIDs(fs, all[i:j]); err != nil {
				return nil, err
			}
			slices.SortFunc(all[i:j], func(a, b pageHit) int { return strings.Compare(a.id, b.id) })
		}
		i = j
	}
	return all[:min(len(all), need)], nil
}

// boundsOf returns the oldest and newest times of the views' blocks.
func boundsOf(vs []*view) (lo, hi time.Time) {
	var l, h int64
	found := false
	for _, v := range vs {
		for _, b := range v.blocks {
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
		return lo, hi
	}
	return time.Unix(0, l).UTC(), time.Unix(0, h).UTC()
}

// sortTies orders the hits of one time by node and file in line order,
// newest (last line) first when newestFirst, untimed hits last. A page
// brings them in time and ID order; a second of vLLM output then reads as
// the log did.
func sortTies(hits []Hit, newestFirst bool) {
	dir := 1
	if newestFirst {
		dir = -1
	}
	slices.SortStableFunc(hits, func(a, b Hit) int {
		if a.Time.IsZero() != b.Time.IsZero() {
			if a.Time.IsZero() {
				return 1
			}
			return -1
		}
		return cmp.Or(dir*a.Time.Compare(b.Time), cmp.Compare(a.Node, b.Node), cmp.Compare(a.File, b.File),
			dir*cmp.Compare(a.Offset, b.Offset))
	})
}
