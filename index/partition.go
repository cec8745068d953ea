package index

import (
	"math"
	"slices"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search/query"
)

// partitionQuery matches the events of the stream partitions ps (none when
// ps is empty). In a partitioned index (Options.Partitioned) every event
// has its partition's term; otherwise partition 0 is the events without
// one, which includes everything indexed outside cluster mode.
func partitionQuery(ps []int, partitioned bool) query.Query {
	ps = slices.Compact(slices.Sorted(slices.Values(ps)))
	var qs []query.Query
	for _, p := range ps {
		if p == 0 && !partitioned {
			b := bleve.NewBooleanQuery()
			b.AddMust(bleve.NewMatchAllQuery())
			b.AddMustNot(intRangeQuery(FieldPartition, math.MinInt64, math.MaxInt64))
			qs = append(qs, b)
			continue
		}
		qs = append(qs, intRangeQuery(FieldPartition, int64(p), int64(p)))
	}
	switch len(qs) {
	case 0:
		return bleve.NewMatchNoneQuery()
	case 1: // a disjunction of one would hide the term from the bitmap path
		return qs[0]
	}
	return bleve.NewDisjunctionQuery(qs...)
}
