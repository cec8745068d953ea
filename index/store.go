package index

import (
	"context"
	"time"

	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/parsers"
)

// Searcher is the read side of an index, what the HTTP API and UI (web)
// ask of it: hits of a query, with its facets (Query.Facets) and time
// histogram (Query.Histogram); the lines around a hit; the time range; the
// stored findings; counts for /metrics. A second backend, or a fan-out
// across several analyzers, plugs in here.
type Searcher interface {
	Search(ctx context.Context, q Query) (Result, error)
	Context(ctx context.Context, id string, n int) (Context, error)
	Bounds(ctx context.Context) (lo, hi time.Time, err error)
	Findings() []finding.Finding
	DocCount() (uint64, error)
	Stats() Stats
}

// Store is a Searcher that is also written to, as serve does: events as
// they arrive (durable after Flush), findings as they are announced.
type Store interface {
	Searcher
	Add(ev *parsers.Event) error
	Flush(ctx context.Context) error
	PutFindings(fs []finding.Finding) error
	Close() error
}

// Bleve's Index is the one implementation today.
var _ Store = (*Index)(nil)
