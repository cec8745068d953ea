package index

import (
	"context"
	"errors"
	"fmt"
	"regexp/syntax"
	"strings"
	"time"

	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/searcher"
	bindex "github.com/blevesearch/bleve_index_api"
)

// Limits that keep one query from taking the server down.
const (
	// DefaultSearchTimeout bounds a search (Options.SearchTimeout).
	DefaultSearchTimeout = 5 * time.Second
	// MaxTermExpansion is how many index terms one regexp or wildcard term
	// may stand for, per shard. /.*/ stands for every word ever logged:
	// Bleve would gather them all (6 GB for 600k events) before searching.
	MaxTermExpansion = 10000
	// MaxResultWindow bounds from+size: a page that deep keeps every hit
	// before it in a heap (from=599000 took 9.5 s and hundreds of MB); past
	// it, the query is narrowed instead (a time range, filters).
	MaxResultWindow = 50000
)

// ErrQueryTooBroad and ErrTooDeep are errors of the query itself (HTTP 400).
var (
	ErrQueryTooBroad = errors.New("query too broad")
	ErrTooDeep       = errors.New("page too deep")
)

// IsBadQuery tells the errors that are the query's fault.
func IsBadQuery(err error) bool {
	_, syntax := AsQueryError(err)
	return syntax || errors.Is(err, ErrQueryTooBroad) || errors.Is(err, ErrTooDeep) || errors.Is(err, ErrBadCursor)
}

// withDeadline bounds ctx by the index's search timeout.
func (x *Index) withDeadline(ctx context.Context) (context.Context, context.CancelFunc) {
	if x.opts.SearchTimeout < 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, x.opts.SearchTimeout)
}

// deadlineError says that a search ran out of time, and how to get an answer.
func (x *Index) deadlineError(ctx context.Context, err error) error {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("search stopped at its deadline (%v): narrow the query (a time range, node or level filters, fewer wildcards): %w",
			x.opts.SearchTimeout, context.DeadlineExceeded)
	}
	return err
}

// expandQuery is a regexp or wildcard term whose expansion into index terms
// is bounded (MaxTermExpansion) and stops when ctx ends: Bleve's own regexp
// searcher gathers every matching term, however many, before it checks any
// limit or the context.
type expandQuery struct {
	field   string
	pattern string // Go regexp matching whole terms
	display string // as the user typed it
	boost   float64
}

func newRegexpQuery(field, re string) *expandQuery {
	// Terms are matched whole; a leading ^ is implied (Bleve drops it too).
	return &expandQuery{field: field, pattern: strings.TrimPrefix(re, "^"), display: "/" + re + "/", boost: 1}
}

func newWildcardQuery(field, w string) *expandQuery {
	var b strings.Builder
	for _, r := range w {
		switch r {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		default:
			b.WriteString(syntaxQuote(r))
		}
	}
	return &expandQuery{field: field, pattern: b.String(), display: w, boost: 1}
}

func syntaxQuote(r rune) string {
	s := string(r)
	if strings.ContainsRune(`\.+*?()|[]{}^$`, r) {
		return `\` + s
	}
	return s
}

// Validate reports a pattern that does not compile before any search.
func (q *expandQuery) Validate() error {
	if _, err := syntax.Parse(q.pattern, syntax.Perl); err != nil {
		return fmt.Errorf("query: %s: %w", q.display, err)
	}
	return nil
}

func (q *expandQuery) Searcher(ctx context.Context, r bindex.IndexReader, m mapping.IndexMapping, options search.SearcherOptions) (search.Searcher, error) {
	ir, ok := r.(bindex.IndexReaderRegexp)
	if !ok {
		return nil, fmt.Errorf("query: %s: this index cannot expand patterns", q.display)
	}
	dict, _, err := ir.FieldDictRegexpAutomaton(q.field, q.pattern)
	if err != nil {
		return nil, fmt.Errorf("query: %s: %w", q.display, err)
	}
	defer dict.Close()
	var terms []string
	for n := 0; ; n++ {
		if n%1024 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		t, err := dict.Next()
		if err != nil {
			return nil, fmt.Errorf("query: %s: %w", q.display, err)
		}
		if t == nil {
			break
		}
		if len(terms) == MaxTermExpansion {
			return nil, fmt.Errorf("%w: %s matches more than %d different words; make it more specific (a longer literal part, no leading wildcard) or add filters",
				ErrQueryTooBroad, q.display, MaxTermExpansion)
		}
		terms = append(terms, t.Term)
	}
	return searcher.NewMultiTermSearcher(ctx, r, terms, q.field, q.boost, options, true)
}
