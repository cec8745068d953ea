package index

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Limits that keep one query from taking the server down.
const (
	// DefaultSearchTimeout bounds a search (Options.SearchTimeout).
	DefaultSearchTimeout = 5 * time.Second
	// MaxTermExpansion is how many index terms one regexp or wildcard term
	// may stand for, per shard. /.*/ stands for every word ever logged:
	// gathering them all took 6 GB for 600k events.
	MaxTermExpansion = 10000
	// MaxResultWindow bounds from+size: a page that deep holds every hit
	// before it (from=599000 took 9.5 s and hundreds of MB); past it, the
	// query is narrowed instead (a time range, filters) or paged by cursor.
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

// ctxErr is ctx.Err(), or the deadline's error as soon as it has passed
// (a context's timer may fire a moment after its deadline).
func ctxErr(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		return context.DeadlineExceeded
	}
	return nil
}
