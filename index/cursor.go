package index

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
)

// Deep paging by cursor (search_after). Hits come in one total order: the
// query's sort, then the event ID, which is unique and stable across
// segment merges and restarts. A page's Next cursor holds the last hit's
// sort key and ID; the page after it is every hit past that key, so a
// cursor costs the same at hit 50 as at hit 599,000 (From keeps every hit
// before the page in a heap).
//
// Sorting by ID costs an ID lookup per hit, so in time order only the
// hits that share a page's boundary time are put in ID order (see
// canonical): Bleve sorts by time alone, then the tied hits at each edge
// of the page are looked up again in ID order. By score, Bleve sorts by
// score, time and ID itself.

// ErrBadCursor is a cursor (Query.After) that cannot be read or belongs to
// another query (HTTP 400).
var ErrBadCursor = errors.New("bad cursor")

const cursorVersion = 1

// cursor is where a page ended. It is opaque to clients: base64 of JSON.
type cursor struct {
	V    int    `json:"v"`
	Hash uint32 `json:"h"` // of the query and order it pages through
	// Time order: the last hit's time (Timed false: a hit without time;
	// those come after all timed hits in either direction).
	Timed bool  `json:"t,omitempty"`
	NS    int64 `json:"ns,omitempty"`
	// Score order: the last hit's score and time sort term.
	Score   float64 `json:"sc,omitempty"`
	TimeKey []byte  `json:"tk,omitempty"`
	ID      string  `json:"id"` // the tie-breaker
}

func (c cursor) encode() string {
	b, _ := json.Marshal(c) // only plain fields: cannot fail
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeCursor reads s, a Result.Next of a search of q.
func decodeCursor(s string, q Query) (*cursor, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	var c cursor
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil || c.V != cursorVersion || c.ID == "" {
		return nil, fmt.Errorf("%w: after=%.40q is not a cursor of this server (pass the next value of the previous page as is)", ErrBadCursor, s)
	}
	if c.Hash != queryHash(q) {
		return nil, fmt.Errorf("%w: after is the cursor of another query or sort order; start again without after", ErrBadCursor)
	}
	return &c, nil
}

// queryHash identifies what a cursor pages through: the query text,
// filters and order. Not the time range: since=2h is another time at each
// page, and the page after a key is well defined in any range. Nor the
// partitions: a fan-out passes one cursor to analyzers that own different
// partitions, and ownership may move between pages.
func queryHash(q Query) uint32 {
	k := struct {
		Text                                     string
		Nodes, Containers, Sources, Levels, File []string
		Sort                                     string
	}{q.Text, q.Nodes, q.Containers, q.Sources, q.Levels, q.Files, sortName(q.Sort)}
	b, _ := json.Marshal(k)
	h := fnv.New32a()
	h.Write(b)
	return h.Sum32()
}

func sortName(s string) string {
	if s == "" {
		return "-time"
	}
	return s
}

// timeKey is the sort key of a hit in time order: its time, or none.
type timeKey struct {
	timed bool
	ns    int64
}

func keyOf(h Hit) timeKey {
	if h.Time.IsZero() {
		return timeKey{}
	}
	return timeKey{true, timeNanos(h.Time)}
}

// inGroup narrows bq to the hits of key k.
func inGroup(bq query.Query, k timeKey) query.Query {
	if k.timed {
		return and(bq, timeRangeInclusive(k.ns, k.ns))
	}
	b := bleve.NewBooleanQuery()
	b.AddMust(bq)
	b.AddMustNot(anyTime())
	return b
}

// beforeGroup narrows bq to the hits that come before key k: newer ones
// when newest first, older ones otherwise; every timed one before the
// untimed.
func beforeGroup(bq query.Query, k timeKey, newest bool) query.Query {
	switch {
	case !k.timed:
		return and(bq, anyTime())
	case newest && k.ns == math.MaxInt64, !newest && k.ns == math.MinInt64:
		return bleve.NewMatchNoneQuery()
	case newest:
		return and(bq, timeRangeInclusive(k.ns+1, math.MaxInt64))
	}
	return and(bq, timeRangeInclusive(math.MinInt64, k.ns-1))
}

// groupByID returns the first n hits of bq with key k in ID order, those
// after the ID after when it is set.
func (x *Index) groupByID(ctx context.Context, bq query.Query, k timeKey, after string, n int) ([]Hit, error) {
	if n <= 0 {
		return nil, nil
	}
	req := x.request(inGroup(bq, k), Query{}, n, 0, []string{"_id"})
	if after != "" {
		req.SearchAfter = []string{after}
	}
	sr, err := x.alias.SearchInContext(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	return hitsOf(sr.Hits), nil
}

func hitsOf(dms search.DocumentMatchCollection) []Hit {
	out := make([]Hit, 0, len(dms))
	for _, dm := range dms {
		out = append(out, hitFromMatch(dm))
	}
	return out
}

// canonical puts the hits of a page in time order, [from, from+len(hits))
// of bq's total hits with ties in any order, into the order of time then
// ID: where the page cuts a run of hits of one time, the hits of that time
// it holds become the run's lowest IDs (at its end) or the ones following
// those of the earlier pages (at its start). Only the runs at the edges
// are looked up, by two counts and an ID-sorted search each.
func (x *Index) canonical(ctx context.Context, q Query, bq query.Query, total uint64, hits []Hit, from int) ([]Hit, error) {
	if len(hits) == 0 {
		return hits, nil
	}
	out, err := x.canonicalEdges(ctx, q, bq, total, hits, from)
	if err != nil {
		return nil, err
	}
	// Each run of one time in ID order: a prefix of the page is then the
	// page of that size (see Index.search).
	for i := 0; i < len(out); {
		j := i + 1
		for j < len(out) && keyOf(out[j]) == keyOf(out[i]) {
			j++
		}
		slices.SortFunc(out[i:j], func(a, b Hit) int { return strings.Compare(a.ID, b.ID) })
		i = j
	}
	return out, nil
}

func (x *Index) canonicalEdges(ctx context.Context, q Query, bq query.Query, total uint64, hits []Hit, from int) ([]Hit, error) {
	newest := q.Sort != "time"
	first, last := keyOf(hits[0]), keyOf(hits[len(hits)-1])
	nFirst := 0 // hits of the first key on the page
	for nFirst < len(hits) && keyOf(hits[nFirst]) == first {
		nFirst++
	}
	nLast := 0
	for nLast < len(hits) && keyOf(hits[len(hits)-1-nLast]) == last {
		nLast++
	}
	// skip: hits of the first key on earlier pages.
	skip := 0
	if from > 0 {
		n, err := x.count(ctx, beforeGroup(bq, first, newest))
		if err != nil {
			return nil, err
		}
		skip = max(from-int(n), 0)
	}
	// cut: more hits of the last key follow the page.
	upTo := total
	if last.timed {
		nb, err := x.count(ctx, beforeGroup(bq, last, newest))
		if err != nil {
			return nil, err
		}
		ng, err := x.count(ctx, inGroup(bq, last))
		if err != nil {
			return nil, err
		}
		upTo = nb + ng
	}
	cut := upTo > uint64(from+len(hits))
	if first == last {
		if skip == 0 && !cut {
			return hits, nil
		}
		g, err := x.groupByID(ctx, bq, first, "", skip+len(hits))
		if err != nil {
			return nil, err
		}
		return g[min(skip, len(g)):], nil
	}
	out := hits
	if skip > 0 {
		g, err := x.groupByID(ctx, bq, first, "", skip+nFirst)
		if err != nil {
			return nil, err
		}
		out = append(slices.Clone(g[min(skip, len(g)):]), hits[nFirst:]...)
	}
	if cut {
		g, err := x.groupByID(ctx, bq, last, "", nLast)
		if err != nil {
			return nil, err
		}
		out = append(slices.Clone(out[:len(out)-nLast]), g...)
	}
	return out, nil
}

// afterPage returns the size hits that follow cursor c in time order: the
// rest of c's time in ID order, then the page of the hits past that time,
// then (when q has no time range) the hits without time.
func (x *Index) afterPage(ctx context.Context, q Query, bq query.Query, c *cursor, size int, sortBy []string) ([]Hit, error) {
	k := timeKey{c.Timed, c.NS}
	hits, err := x.groupByID(ctx, bq, k, c.ID, size)
	if err != nil || len(hits) == size || !k.timed {
		return hits, err
	}
	// Past c's time: a time range, so the windows of timePage apply.
	q2 := q
	if q.Sort == "time" {
		if since := time.Unix(0, c.NS+1).UTC(); c.NS < math.MaxInt64 && since.After(q.Since) {
			q2.Since = since
		}
	} else if until := time.Unix(0, c.NS).UTC(); q.Until.IsZero() || until.Before(q.Until) {
		q2.Until = until
	}
	bq2, err := buildQuery(q2, x.opts.Partitioned)
	if err != nil {
		return nil, err
	}
	total2, err := x.count(ctx, bq2)
	if err != nil {
		return nil, err
	}
	if total2 > 0 {
		page, err := x.timePage(ctx, q2, bq2, total2, size-len(hits), 0, sortBy)
		if err != nil {
			return nil, err
		}
		more, err := x.canonical(ctx, q2, bq2, total2, hitsOf(page.Hits), 0)
		if err != nil {
			return nil, err
		}
		hits = append(hits, more...)
	}
	if len(hits) < size && q.Since.IsZero() && q.Until.IsZero() {
		more, err := x.groupByID(ctx, bq, timeKey{}, "", size-len(hits))
		if err != nil {
			return nil, err
		}
		hits = append(hits, more...)
	}
	return hits, nil
}

// timeCursor is the cursor after hits, a page in time then ID order.
func timeCursor(q Query, hits []Hit) cursor {
	last := hits[len(hits)-1]
	k := keyOf(last)
	return cursor{V: cursorVersion, Hash: queryHash(q), Timed: k.timed, NS: k.ns, ID: last.ID}
}

// scoreCursor is the cursor after dm, the last hit of a page by score.
func scoreCursor(q Query, dm *search.DocumentMatch) cursor {
	c := cursor{V: cursorVersion, Hash: queryHash(q), Score: dm.Score, ID: dm.ID}
	if len(dm.Sort) > 1 {
		c.TimeKey = []byte(dm.Sort[1])
	}
	return c
}

// searchAfter is the Bleve search_after of c by score, time and ID.
func (c *cursor) searchAfter() []string {
	return []string{strconv.FormatFloat(c.Score, 'g', -1, 64), string(c.TimeKey), c.ID}
}
