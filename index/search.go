package index

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/numeric"
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
	Histogram int  `json:"histogram,omitempty"`
	Highlight bool `json:"highlight,omitempty"`
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
// two filters over 865k events: 31 -> ms). Sorted by score, the filters
// are a non-scoring clause.
func BuildQuery(q Query) (query.Query, error) {
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

// Search runs q over all shards.
func (x *Index) Search(ctx context.Context, q Query) (Result, error) {
	start := time.Now()
	bq, err := BuildQuery(q)
	if err != nil {
		return Result{}, err
	}
	size := q.Size
	switch {
	case size < 0:
		size = 0 // counts, facets and histogram only
	case size == 0:
		size = 50
	}
	size = min(size, 10000)
	from := max(q.From, 0)
	var sortBy []string
	switch q.Sort {
	// No _id tie-breaker: it costs an ID lookup per hit, and times are in
	// nanoseconds.
	case "", "-time":
		sortBy = []string{"-" + FieldTimeSort}
	case "time":
		sortBy = []string{FieldTimeSort}
	case "score":
		sortBy = []string{"-_score", "-" + FieldTimeSort}
	default:
		return Result{}, fmt.Errorf("search: bad sort %q (want -time, time or score)", q.Sort)
	}
	// A page in time order is found apart from the counts (see timePage):
	// the first request only counts, facets and histograms.
	byTime := size > 0 && q.Sort != "score"
	req := x.request(bq, q, size, from, sortBy)
	if byTime {
		req = x.request(bq, q, 0, 0, nil)
	}
	var buckets []Bucket
	if q.Histogram > 0 {
		lo, hi := q.Since, q.Until
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
		if len(buckets) > 0 {
			fr := bleve.NewFacetRequest(FieldTimeSort, len(buckets))
			for i, b := range buckets {
				fr.AddDateTimeRange(strconv.Itoa(i), b.Start, b.End)
			}
			req.AddFacet("_histogram", fr)
		}
	}
	sr, err := x.alias.SearchInContext(ctx, req)
	if err != nil {
		return Result{}, fmt.Errorf("search: %w", err)
	}
	page := sr
	if byTime {
		if page, err = x.timePage(ctx, q, bq, sr.Total, size, from, sortBy); err != nil {
			return Result{}, err
		}
	}
	res := Result{Total: sr.Total, Hits: make([]Hit, 0, len(page.Hits))}
	for _, dm := range page.Hits {
		res.Hits = append(res.Hits, hitFromMatch(dm))
	}
	if q.Highlight && len(res.Hits) > 0 {
		if err := x.highlight(ctx, bq, res.Hits); err != nil {
			return Result{}, err
		}
	}
	for f, fr := range sr.Facets {
		if f == "_histogram" {
			for _, dr := range fr.DateRanges {
				if i, err := strconv.Atoi(dr.Name); err == nil && i >= 0 && i < len(buckets) {
					buckets[i].Count = dr.Count
				}
			}
			continue
		}
	}
	res.Histogram = buckets
	if q.Facets {
		if res.Facets, err = x.facets(ctx, q, bq, sr.Total); err != nil {
			return Result{}, err
		}
	}
	if sr.Status != nil {
		for name, err := range sr.Status.Errors {
			res.Errors = append(res.Errors, fmt.Sprintf("%s: %v", name, err))
		}
	}
	res.Took = time.Since(start)
	return res, nil
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
			sub := q
			if newest {
				sub.Since = alignTime(hi.Add(-w), w, false)
			} else {
				sub.Until = alignTime(lo.Add(w), w, true)
			}
			wq, err := BuildQuery(sub)
			if err != nil {
				return nil, err
			}
			sr, err := x.alias.SearchInContext(ctx, x.request(wq, q, size, from, sortBy))
			if err != nil {
				return nil, fmt.Errorf("search: %w", err)
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
	sr, err := x.alias.SearchInContext(ctx, x.request(bq, q, size, from, sortBy))
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	return sr, nil
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
		sr, err := x.alias.SearchInContext(ctx, x.request(and(bq, anyTime()), q, n, from, sortBy))
		if err != nil {
			return nil, fmt.Errorf("search: %w", err)
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
		sr, err := x.alias.SearchInContext(ctx, x.request(untimed, q, rest, int(uint64(max(from, 0))-min(uint64(from), timed)), nil))
		if err != nil {
			return nil, fmt.Errorf("search: %w", err)
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

// Facets of many hits are counted term by term: reading four doc values
// per hit cost ~200 ms for 184k hits in 4.3M events, while the hits having
// one value of a field are an intersection of postings, a few ms each.
// Fields with more values than facetMaxTerms, and results with fewer hits
// than facetCountMin, take Bleve's facets.
const (
	facetCountMin = 20000
	facetMaxTerms = 64
	facetSize     = 50 // terms returned per field
)

// facets counts the hits of bq (total of them) per value of each facet
// field.
func (x *Index) facets(ctx context.Context, q Query, bq query.Query, total uint64) (map[string][]FacetTerm, error) {
	out := make(map[string][]FacetTerm, len(FacetFields))
	var slow []string // fields for Bleve's facets
	for _, f := range FacetFields {
		out[f] = []FacetTerm{}
		if total == 0 {
			continue
		}
		vals, err := x.fieldTerms(f, facetMaxTerms)
		if err != nil {
			return nil, err
		}
		if total < uint64(x.facetMin) || vals == nil {
			slow = append(slow, f)
			continue
		}
		for _, v := range vals {
			tq := bleve.NewTermQuery(v)
			tq.SetField(f)
			sr, err := x.alias.SearchInContext(ctx, x.request(and(bq, tq), q, 0, 0, nil))
			if err != nil {
				return nil, fmt.Errorf("search facets: %w", err)
			}
			if sr.Total > 0 {
				out[f] = append(out[f], FacetTerm{Term: v, Count: int(sr.Total)})
			}
		}
		slices.SortFunc(out[f], func(a, b FacetTerm) int {
			return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Term, b.Term))
		})
		out[f] = out[f][:min(len(out[f]), facetSize)]
	}
	if len(slow) == 0 {
		return out, nil
	}
	req := x.request(bq, q, 0, 0, nil)
	for _, f := range slow {
		req.AddFacet(f, bleve.NewFacetRequest(f, facetSize))
	}
	sr, err := x.alias.SearchInContext(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("search facets: %w", err)
	}
	for f, fr := range sr.Facets {
		for _, t := range fr.Terms.Terms() {
			out[f] = append(out[f], FacetTerm{Term: t.Term, Count: t.Count})
		}
	}
	return out, nil
}

// fieldTerms returns the values of field in all shards, or nil when there
// are more than limit.
func (x *Index) fieldTerms(field string, limit int) ([]string, error) {
	seen := map[string]bool{}
	for _, s := range x.shards {
		d, err := s.idx.FieldDict(field)
		if err != nil {
			return nil, fmt.Errorf("terms of %s: %w", field, err)
		}
		for {
			e, err := d.Next()
			if err != nil {
				d.Close()
				return nil, fmt.Errorf("terms of %s: %w", field, err)
			}
			if e == nil {
				break
			}
			seen[e.Term] = true
			if len(seen) > limit {
				d.Close()
				return nil, nil
			}
		}
		d.Close()
	}
	vals := make([]string, 0, len(seen))
	for v := range seen {
		vals = append(vals, v)
	}
	slices.Sort(vals)
	return vals, nil
}

// count returns the number of hits of bq.
func (x *Index) count(ctx context.Context, bq query.Query) (uint64, error) {
	sr, err := x.alias.SearchInContext(ctx, x.request(bq, Query{}, 0, 0, nil))
	if err != nil {
		return 0, fmt.Errorf("search: %w", err)
	}
	return sr.Total, nil
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

// Bounds returns the times of the oldest and newest events. The index's
// bounds are found once (two sorted searches over every document, which
// cost like a full scan on millions of events) and then kept up to date by
// Add.
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
	search := func(lo, hi string, loIn, hiIn *bool, size int) (*bleve.SearchResult, error) {
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
		all, err := search(lo, hi, &f, &f, 0)
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
			sr, err := search(lo, hi, loIn, hiIn, k+1)
			if err == nil && sr.Total > uint64(len(sr.Hits)) { // several files on one path
				sr, err = search(lo, hi, loIn, hiIn, int(min(sr.Total, 10000)))
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
		Fields: ev.Fields, Message: ev.Message,
	}
	if h.Message == "" {
		h.Message = ev.Text
	}
	if r, err := strconv.Atoi(ev.Fields["rank"]); err == nil {
		h.Rank = &r
	}
	return h
}
