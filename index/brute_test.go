package index

import (
	"slices"
	"testing"

	"github.com/faultline/faultline/parsers"
)

// The answers of a query by its meaning alone: every event matched one by
// one (match), counted and sorted in Order. Tests compare the index's
// answers, found through its terms and catalog, with these.

func bruteHits(t testing.TB, evs []*parsers.Event, q Query) []Hit {
	t.Helper()
	return bruteMatch(t, bruteRecords(evs), q)
}

// bruteRecords are events as records to match, their tokens made once.
func bruteRecords(evs []*parsers.Event) []*record {
	out := make([]*record, len(evs))
	for i, e := range evs {
		h := HitFromEvent(e)
		if h.Lines <= 1 {
			h.Lines = 0
		}
		out[i] = &record{h: &h}
	}
	return out
}

func bruteMatch(t testing.TB, recs []*record, q Query) []Hit {
	t.Helper()
	root, err := queryNode(q)
	if err != nil {
		t.Fatalf("%+v: %v", q, err)
	}
	var out []Hit
	for _, r := range recs {
		if match(root, r) {
			out = append(out, *r.h)
		}
	}
	return out
}

// brutePage returns the IDs of q's page in Order (time orders only) and
// the total.
func brutePage(t testing.TB, evs []*parsers.Event, q Query) ([]string, int) {
	t.Helper()
	hs := bruteHits(t, evs, q)
	slices.SortStableFunc(hs, Order(q))
	size := q.Size
	if size == 0 {
		size = 50
	}
	from := min(max(q.From, 0), len(hs))
	page := hs[from:min(from+max(size, 0), len(hs))]
	return ids(page, false), len(hs)
}

// bruteFacets counts q's hits per facet value, sorted and cut as Search's.
func bruteFacets(t testing.TB, evs []*parsers.Event, q Query) map[string][]FacetTerm {
	t.Helper()
	counts := map[string]map[string]int{}
	for _, f := range FacetFields {
		counts[f] = map[string]int{}
	}
	for _, h := range bruteHits(t, evs, q) {
		for f, v := range map[string]string{FieldNode: h.Node, FieldContainer: h.Container, FieldSource: h.Source, FieldLevel: h.Level} {
			if v != "" {
				counts[f][v]++
			}
		}
	}
	out := map[string][]FacetTerm{}
	for f, c := range counts {
		terms := []FacetTerm{}
		for v, n := range c {
			terms = append(terms, FacetTerm{Term: v, Count: n})
		}
		out[f] = topTerms(terms)
	}
	return out
}
