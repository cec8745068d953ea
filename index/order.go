package index

import (
	"cmp"
	"slices"
	"strings"
)

// The order of hits, shared by every index and by a fan-out that merges
// the pages of several (each analyzer runs this code, so a cursor made by
// one is read by all):
//
//   - time order ("-time", the default, and "time"): the hits with a time
//     newest (oldest) first, then those without a time; hits of one time
//     in event ID order (bytewise, ascending in both directions);
//   - score order: score, highest first, then time newest first (hits
//     without a time after those with one), then event ID.
//
// A page is the hits that follow its start in this order: From hits, or
// the cursor After, which holds a position in the order (the last hit's
// key and ID), not a hit of one index, so it pages through any index or
// merge of indexes. The index shows a page in time order with the hits of
// one time by node and file in line order (ArrangePage): a second of vLLM
// output then reads as the log did; Next is still the cursor of the page's
// last hit in the order (CursorAfter).

// Order returns the comparison of q's hits in the order pages are cut
// from.
func Order(q Query) func(a, b Hit) int {
	if q.Sort == "score" {
		return func(a, b Hit) int {
			return cmp.Or(cmp.Compare(b.Score, a.Score), compareTime(a, b, true), strings.Compare(a.ID, b.ID))
		}
	}
	newest := q.Sort != "time"
	return func(a, b Hit) int { return cmp.Or(compareTime(a, b, newest), strings.Compare(a.ID, b.ID)) }
}

// compareTime orders hits by time, newest first when newest, the hits
// without a time last.
func compareTime(a, b Hit, newest bool) int {
	ka, kb := keyOf(a), keyOf(b)
	switch {
	case ka.timed != kb.timed:
		if ka.timed {
			return -1
		}
		return 1
	case newest:
		return cmp.Compare(kb.ns, ka.ns)
	}
	return cmp.Compare(ka.ns, kb.ns)
}

// CursorAfter returns the cursor (Query.After) of the page that follows h
// in the order of q: what Result.Next is when h ends a page. Any index
// accepts it for q (or q with other Partitions, From, Size or time range).
func CursorAfter(q Query, h Hit) string {
	if q.Sort != "score" {
		return timeCursor(q, []Hit{h}).encode()
	}
	return scoreCursor(q, h).encode()
}

// ArrangePage puts a page of q's hits, in Order, in the order the index
// shows it: in time order the hits of one time by node and file in line
// order; by score as it is.
func ArrangePage(q Query, hits []Hit) {
	if q.Sort != "score" {
		sortTies(hits, q.Sort != "time")
	}
}

// MergeFacets sums facets of disjoint sets of hits term by term, sorted
// and cut as an index's are (the most frequent facetSize terms of each
// field). Each part holds only its own top terms, so a term past them in
// some part is undercounted: exact while fields have at most facetSize
// values.
func MergeFacets(parts ...map[string][]FacetTerm) map[string][]FacetTerm {
	var sums map[string]map[string]int
	for _, p := range parts {
		if p == nil {
			continue
		}
		if sums == nil {
			sums = map[string]map[string]int{}
		}
		for f, terms := range p {
			if sums[f] == nil {
				sums[f] = map[string]int{}
			}
			for _, t := range terms {
				sums[f][t.Term] += t.Count
			}
		}
	}
	if sums == nil {
		return nil
	}
	out := make(map[string][]FacetTerm, len(sums))
	for f, counts := range sums {
		terms := make([]FacetTerm, 0, len(counts))
		for v, n := range counts {
			terms = append(terms, FacetTerm{Term: v, Count: n})
		}
		out[f] = topTerms(terms)
	}
	return out
}

// topTerms sorts terms by count, most first, then by term, and keeps the
// first facetSize.
func topTerms(terms []FacetTerm) []FacetTerm {
	slices.SortFunc(terms, func(a, b FacetTerm) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Term, b.Term))
	})
	return terms[:min(len(terms), facetSize)]
}

// HistogramBuckets returns the empty buckets of q's histogram when its
// range is known from q alone (Since or HistogramSince, Until or
// HistogramUntil), else nil: the layout a fan-out sums its indexes'
// histograms into.
func HistogramBuckets(q Query) []Bucket {
	return makeBuckets(orTime(q.Since, q.HistogramSince), orTime(q.Until, q.HistogramUntil), q.Histogram)
}
