package index

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
	bindex "github.com/blevesearch/bleve_index_api"

	"github.com/faultline/faultline/parsers"
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
	// Errors of shards that failed; the other shards' hits are still there.
	Errors []string `json:"errors,omitempty"`
	// Next is the cursor of the page after this one (Query.After); empty
	// on the last page.
	Next string `json:"next,omitempty"`
	// Partial names the searchers of a fan-out (analyzers) that did not
	// answer, and why: the hits and counts are those of the others.
	Partial []string `json:"partial,omitempty"`
}

// FacetFields are the fields Query.Facets counts.
var FacetFields = []string{FieldNode, FieldContainer, FieldSource, FieldLevel}

// storedFields are loaded for each hit: the one stored value.
var storedFields = []string{FieldEvent}

// BuildQuery returns the Bleve query of q: the parsed text with the
// filters. Unless q sorts by score, it is one flat conjunction of the
// text's required clauses and the filters: with scores off, Bleve then
// intersects the clauses' postings as bitmaps per segment instead of
// stepping through nested searchers hit by hit (a one-minute range with
// two filters over 865k events: 31 -> 15 ms, with anyOf). Sorted by score,
// the filters are a non-scoring clause.
func BuildQuery(q Query) (query.Query, error) { return buildQuery(q, false) }

// buildQuery is BuildQuery for an index that is partitioned or not (see
// partitionQuery).
func buildQuery(q Query, partitioned bool) (query.Query, error) {
	text, err := ParseQuery(q.Text)
	if err != nil {
		return nil, err
	}
	var filters []query.Query
	addTerms := func(field string, vals []string) {
		var qs []query.Query
		for _, v := range vals {
			if v == "" {
				continue
			}
			if lowerCaseFields[field] {
				v = strings.ToLower(v)
			}
			t := bleve.NewTermQuery(v)
			t.SetField(field)
			qs = append(qs, t)
		}
		switch len(qs) {
		case 0:
		case 1: // a disjunction of one would hide the term from the bitmap path
			filters = append(filters, qs[0])
		default:
			filters = append(filters, bleve.NewDisjunctionQuery(qs...))
		}
	}
	addTerms(FieldNode, q.Nodes)
	addTerms(FieldContainer, q.Containers)
	addTerms(FieldSource, q.Sources)
	addTerms(FieldLevel, q.Levels)
	addTerms(FieldFile, q.Files)
	if !q.Since.IsZero() || !q.Until.IsZero() {
		filters = append(filters, timeRangeQuery(q.Since, q.Until))
	}
	if q.Partitions != nil {
		filters = append(filters, partitionQuery(q.Partitions, partitioned))
	}
	if q.Sort != "score" {
		return and(append([]query.Query{text}, filters...)...), nil
	}
	b := bleve.NewBooleanQuery()
	b.AddMust(text)
	if len(filters) > 0 {
		// BooleanQuery holds a single filter, so the filters are AND-ed here.
		b.AddMust(filterQuery{bleve.NewConjunctionQuery(filters...)})
	}
	return b, nil
}

// and is the conjunction of qs as one flat conjunction of their required
// clauses (see requiredClauses).
func and(qs ...query.Query) query.Query {
	var clauses []query.Query
	for _, q := range qs {
		clauses = requiredClauses(q, clauses)
	}
	if len(clauses) > 1 { // everything AND-ed with the rest is no clause
		clauses = slices.DeleteFunc(clauses, func(c query.Query) bool {
			_, all := c.(*query.MatchAllQuery)
			return all
		})
	}
	if len(clauses) == 1 {
		return clauses[0]
	}
	return bleve.NewConjunctionQuery(clauses...)
}

// requiredClauses appends the clauses q requires, looking through
// conjunctions and Boolean queries that only require: the leaves of a
// flat conjunction.
func requiredClauses(q query.Query, out []query.Query) []query.Query {
	switch q := q.(type) {
	case *query.ConjunctionQuery:
		if q.BoostVal == nil {
			for _, c := range q.Conjuncts {
				out = requiredClauses(c, out)
			}
			return out
		}
	case *query.BooleanQuery:
		if q.Must != nil && q.Should == nil && q.MustNot == nil && q.Filter == nil && q.BoostVal == nil {
			return requiredClauses(q.Must, out)
		}
	}
	return append(out, q)
}

// filterQuery matches what q matches and adds nothing to the score. It
// stands for Bleve's BooleanQuery filter, which checks every hit of the
// scored part against the filter: an empty or broad query then walks
// millions of events (a one-minute range over 4.3M events: 350 ms). As
// one side of a conjunction, the rarer side leads and the other skips
// ahead.
type filterQuery struct{ q query.Query }

func (f filterQuery) Searcher(ctx context.Context, i bindex.IndexReader, m mapping.IndexMapping,
	options search.SearcherOptions) (search.Searcher, error) {
	options.Score = "none"
	options.IncludeTermVectors = false
	options.Explain = false
	return f.q.Searcher(ctx, i, m, options)
}

// Search runs q over all shards, within the search timeout and until ctx
// ends (an HTTP client that went away).
func (x *Index) Search(ctx context.Context, q Query) (Result, error) {
	ctx, cancel := x.withDeadline(ctx)
	defer cancel()
	res, err := x.search(ctx, q)
	if err != nil {
		return Result{}, x.deadlineError(ctx, err)
	}
	return res, nil
}

func (x *Index) search(ctx context.Context, q Query) (Result, error) {
	start := time.Now()
	bq, err := buildQuery(q, x.opts.Partitioned)
	if err != nil {
		return Result{}, err
	}
	size, err := PageSize(q)
	if err != nil {
		return Result{}, err
	}
	from := max(q.From, 0)
	var sortBy []string
	switch q.Sort {
	// No _id tie-breaker (an ID lookup per hit): pages in time order put
	// only the ties at their edges in ID order (canonical).
	case "", "-time":
		sortBy = []string{"-" + FieldTimeSort}
	case "time":
		sortBy = []string{FieldTimeSort}
	case "score":
		sortBy = []string{"-_score", "-" + FieldTimeSort, "_id"}
	}
	var after *cursor
	if q.After != "" && size > 0 { // counts alone (the timeline's) have no page to start
		if after, err = decodeCursor(q.After, q); err != nil {
			return Result{}, err
		}
	}
	// A page in time order is found apart from the count (see timePage):
	// the first request only counts.
	byTime := size > 0 && q.Sort != "score"
	// One hit more than the page tells whether another page follows.
	fetch := size
	if size > 0 {
		fetch++
	}
	req := x.request(bq, q, fetch, from, sortBy)
	if byTime {
		req.Size, req.From, req.Sort = 0, 0, nil
	} else if after != nil && size > 0 {
		req.SearchAfter = after.searchAfter()
	}
	var buckets []Bucket
	if q.Histogram > 0 {
		lo, hi := orTime(q.Since, q.HistogramSince), orTime(q.Until, q.HistogramUntil)
		if lo.IsZero() || hi.IsZero() {
			blo, bhi, err := x.Bounds(ctx)
			if err != nil {
				return Result{}, err
			}
			if lo.IsZero() {
				lo = blo
			}
			if hi.IsZero() {
				hi = bhi.Add(time.Nanosecond)
			}
		}
		buckets = makeBuckets(lo, hi, q.Histogram)
	}
	sr, err := x.alias.SearchInContext(ctx, req)
	if err != nil {
		return Result{}, fmt.Errorf("search: %w", err)
	}
	// Facets with the histogram, and the page, are separate passes over the
	// same hits: run them side by side.
	var facets map[string][]FacetTerm
	var facetsErr error
	var wg sync.WaitGroup
	if q.Facets || len(buckets) > 0 {
		wg.Go(func() { facets, facetsErr = x.facetsAndHistogram(ctx, q, bq, sr.Total, buckets) })
	}
	var hits []Hit
	switch {
	case byTime && after != nil:
		hits, err = x.afterPage(ctx, q, bq, after, fetch, sortBy)
	case byTime:
		var page *bleve.SearchResult
		if page, err = x.timePage(ctx, q, bq, sr.Total, fetch, from, sortBy); err == nil {
			hits, err = x.canonical(ctx, q, bq, sr.Total, hitsOf(page.Hits), from)
		}
	default:
		hits = hitsOf(sr.Hits)
	}
	wg.Wait()
	if err = cmp.Or(err, facetsErr); err != nil {
		return Result{}, err
	}
	if hits == nil {
		hits = []Hit{}
	}
	res := Result{Total: sr.Total, Hits: hits, Facets: facets}
	if len(hits) > size {
		res.Hits = hits[:size]
		if byTime {
			res.Next = timeCursor(q, res.Hits).encode()
		} else {
			res.Next = scoreCursor(q, sr.Hits[size-1]).encode()
		}
	}
	if byTime {
		ArrangePage(q, res.Hits)
	}
	if q.Highlight && len(res.Hits) > 0 {
		if err := x.highlight(ctx, bq, res.Hits); err != nil {
			return Result{}, err
		}
	}
	res.Histogram = buckets
	if sr.Status != nil {
		for name, err := range sr.Status.Errors {
			res.Errors = append(res.Errors, fmt.Sprintf("%s: %v", name, err))
		}
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

// sortTies orders the hits of one time by node and file in line order,
// newest (last line) first when newestFirst, untimed hits last. A page
// brings them in index order, shard by shard; a second of vLLM output then
// reads as the log did.
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

// request is a search for a page of hits of q (size 0: none).
func (x *Index) request(bq query.Query, q Query, size, from int, sortBy []string) *bleve.SearchRequest {
	req := bleve.NewSearchRequestOptions(bq, size, from, false)
	req.Fields = storedFields
	if size > 0 && len(sortBy) > 0 {
		// Without hits to return, sorting would still read every hit's doc
		// values (746k hits at 4.3M events: 165 -> 29 ms).
		req.SortBy(sortBy)
	} else {
		req.Sort = nil
	}
	if q.Sort != "score" || size == 0 {
		// Scores would be computed for every hit and never looked at;
		// without them Bleve also intersects and unites postings as bitmaps.
		req.Score = "none"
	}
	return req
}

// highlight fills in the highlights of hits. Term locations cost for every
// matching document, so they are asked for in a second search restricted to
// the page of hits rather than in the main one, which may match millions.
func (x *Index) highlight(ctx context.Context, q query.Query, hits []Hit) error {
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = h.ID
	}
	b := bleve.NewBooleanQuery()
	b.AddMust(q)
	b.AddMust(filterQuery{bleve.NewDocIDQuery(ids)})
	req := bleve.NewSearchRequestOptions(b, len(ids), 0, false)
	req.IncludeLocations = true
	sr, err := x.alias.SearchInContext(ctx, req)
	if err != nil {
		return fmt.Errorf("search highlights: %w", err)
	}
	byID := make(map[string]*search.DocumentMatch, len(sr.Hits))
	for _, dm := range sr.Hits {
		byID[dm.ID] = dm
	}
	for i := range hits {
		if dm, ok := byID[hits[i].ID]; ok {
			hits[i].Highlights = highlights(dm, hits[i].Message)
		}
	}
	return nil
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

// Get returns one event by ID.
func (x *Index) Get(ctx context.Context, id string) (Hit, bool, error) {
	req := bleve.NewSearchRequestOptions(bleve.NewDocIDQuery([]string{id}), 1, 0, false)
	req.Fields = storedFields
	sr, err := x.alias.SearchInContext(ctx, req)
	if err != nil {
		return Hit{}, false, fmt.Errorf("get %s: %w", id, err)
	}
	if len(sr.Hits) == 0 {
		return Hit{}, false, nil
	}
	return hitFromMatch(sr.Hits[0]), true, nil
}

// Context is an event with the records around it in the same file.
type Context struct {
	Hit    Hit   `json:"hit"`
	Before []Hit `json:"before"` // oldest first
	After  []Hit `json:"after"`
}

// Context returns the n records before and after the event id in its file
// (same node and file identity), in file order: grep -C for records.
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
	h, ok, err := x.Get(ctx, id)
	if err != nil {
		return Context{}, err
	}
	if !ok {
		return Context{}, fmt.Errorf("context: %w: %s", ErrNotFound, id)
	}
	c := Context{Hit: h, Before: []Hit{}, After: []Hit{}}
	if n <= 0 {
		return c, nil
	}
	n = min(n, 1000)
	if ok, err := x.hasFileLines(h); err != nil {
		return Context{}, err
	} else if ok {
		return x.contextByFileLines(ctx, c, n)
	}
	return x.contextByLineRanges(ctx, c, n)
}

// contextByLineRanges is the context of an event indexed before
// FieldFileLine existed.
func (x *Index) contextByLineRanges(ctx context.Context, c Context, n int) (Context, error) {
	h, id := c.Hit, c.Hit.ID
	var err error
	sameFile := func() *query.BooleanQuery {
		b := bleve.NewBooleanQuery()
		nq := bleve.NewTermQuery(h.Node)
		nq.SetField(FieldNode)
		b.AddMust(nq)
		fq := bleve.NewTermQuery(h.File)
		fq.SetField(FieldFile)
		b.AddMust(fq)
		return b
	}
	// Lines have no doc values (they cost at every segment build and
	// merge): the nearest records are found in a range of lines that
	// widens until it holds n of them, and sorted here. Records of a file
	// start on distinct lines, so k lines hold about k records at most.
	f, t := false, true
	find := func(lo, hi string, loIn, hiIn *bool, size int) (*bleve.SearchResult, error) {
		b := sameFile()
		r := bleve.NewTermRangeInclusiveQuery(lo, hi, loIn, hiIn)
		r.SetField(FieldLine)
		b.AddMust(r)
		req := bleve.NewSearchRequestOptions(b, size, 0, false)
		req.Fields = storedFields
		req.Score = "none"
		sr, err := x.alias.SearchInContext(ctx, req)
		if err != nil {
			return nil, fmt.Errorf("context of %s: %w", id, err)
		}
		return sr, nil
	}
	line := padLine(h.Line)
	side := func(before bool) ([]Hit, error) {
		lo, hi := line, ""
		if before {
			lo, hi = "", line
		}
		all, err := find(lo, hi, &f, &f, 0)
		if err != nil {
			return nil, err
		}
		want := min(n, int(all.Total))
		for k := 2 * n; want > 0; k *= 4 {
			lo, hi, loIn, hiIn := line, padLine(h.Line+k), &f, &t
			if before {
				lo, hi, loIn, hiIn = padLine(max(h.Line-k, 0)), line, &t, &f
			}
			if k >= 1<<24 {
				lo, hi, loIn, hiIn = "", "", &f, &f
				if before {
					hi, hiIn = line, &f
				} else {
					lo, loIn = line, &f
				}
			}
			sr, err := find(lo, hi, loIn, hiIn, k+1)
			if err == nil && sr.Total > uint64(len(sr.Hits)) { // several files on one path
				sr, err = find(lo, hi, loIn, hiIn, int(min(sr.Total, 10000)))
			}
			if err != nil {
				return nil, err
			}
			if len(sr.Hits) < want && k < 1<<24 {
				continue
			}
			hits := make([]Hit, 0, len(sr.Hits))
			for _, dm := range sr.Hits {
				hits = append(hits, hitFromMatch(dm))
			}
			slices.SortFunc(hits, func(a, b Hit) int {
				return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Offset, b.Offset))
			})
			if before {
				return hits[max(len(hits)-want, 0):], nil
			}
			return hits[:min(want, len(hits))], nil
		}
		return []Hit{}, nil
	}
	if c.Before, err = side(true); err != nil {
		return Context{}, err
	}
	if c.After, err = side(false); err != nil {
		return Context{}, err
	}
	return c, nil
}

// ErrNotFound is returned for an unknown event ID.
var ErrNotFound = fmt.Errorf("not found")

func hitFromMatch(dm *search.DocumentMatch) Hit {
	h := Hit{ID: dm.ID, Score: dm.Score}
	b, _ := dm.Fields[FieldEvent].(string)
	// A bad blob (only a bug could write one) still yields the ID.
	_ = decodeHit(b, &h)
	return h
}

// highlights merges the message locations of a hit into sorted,
// non-overlapping ranges: a whole chunk and its parts overlap, and parts
// matched by a phrase (ray, utils, py) read better as one mark when only
// punctuation separates them (ray_utils.py).
func highlights(dm *search.DocumentMatch, msg string) [][2]int {
	var rs [][2]int
	for _, locs := range dm.Locations[FieldMessage] {
		for _, l := range locs {
			rs = append(rs, [2]int{int(l.Start), int(l.End)})
		}
	}
	if len(rs) == 0 {
		return nil
	}
	slices.SortFunc(rs, func(a, b [2]int) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(b[1], a[1])) })
	out := rs[:1]
	for _, r := range rs[1:] {
		last := &out[len(out)-1]
		if r[0] <= last[1] || r[0] <= len(msg) && onlyPunct(msg[last[1]:r[0]]) {
			last[1] = max(last[1], r[1])
			continue
		}
		out = append(out, r)
	}
	return out
}

// onlyPunct reports whether s is a short run of punctuation inside a chunk.
func onlyPunct(s string) bool {
	if len(s) == 0 || len(s) > 2 {
		return false
	}
	for _, r := range s {
		if isWord(r) || isBreak(r) {
			return false
		}
	}
	return true
}

// HitFromEvent renders a live event like a search hit, so the UI shows
// both the same way.
func HitFromEvent(ev *parsers.Event) Hit {
	h := Hit{
		ID: ev.ID, Time: eventTime(ev), Cluster: ev.Cluster, Node: ev.Node, Container: ev.Container, File: ev.File,
		Line: ev.Line, Lines: ev.Lines, Offset: ev.Offset, Stream: ev.Stream, Source: ev.Source, Level: ev.Level,
		Component: ev.Component, Process: ev.Process, PID: ev.PID, IP: ev.IP, Cause: ev.Fields["cause"],
		Fields: ev.Fields, Message: ev.Message, Partition: ev.Partition,
	}
	if h.Message == "" {
		h.Message = ev.Text
	}
	if r, err := strconv.Atoi(ev.Fields["rank"]); err == nil {
		h.Rank = &r
	}
	return h
}
