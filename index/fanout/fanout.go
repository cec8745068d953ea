// Package fanout searches several analyzers as one: a Searcher that asks
// every member (this analyzer's own index and its peers) at once and
// merges their answers in the order every index pages by (index.Order),
// so that paging, by From or by cursor, goes through the union of their
// events as through one index. Remote is a member over a peer's HTTP API
// (answering from its own index, local=1); NewRemote without Local is any
// client of that API (`analyzer search --server`), whose search fans out
// there; Restrict keeps a local index to the partitions this analyzer
// owns, which is what each member answers for.
//
// What a merge is exact for: hits, their order and pages; totals, facets
// and histograms of members holding disjoint events (as partitions are).
// An event held by two members (a partition changing owner) is shown once
// but counted by both; facets are summed from each member's top terms.
package fanout

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/index"
)

// Peer is a member of a fan-out.
type Peer struct {
	// Name says which member did not answer (Result.Partial): the
	// analyzer's member name or URL.
	Name     string
	Searcher index.Searcher
	// Owns are the partitions it said it owns (its last heartbeat): those
	// it fails to answer for are named missing (Options.Stream).
	Owns []int
}

// Options tune a fan-out. The zero value is usable.
type Options struct {
	// LocalName names the local searcher in Result.Partial (default
	// "local").
	LocalName string
	// PeerTimeout bounds each request to a member (default: the index's
	// search timeout and a second, so that a member at its own deadline
	// says so before this one gives up on it).
	PeerTimeout time.Duration
	Logger      *slog.Logger
	// Stream, when set, is the partitioned stream of the members: a
	// result then names in Missing (and Partial) every partition no
	// member answered for in full, with the share of messages they hold,
	// rather than counting short in silence.
	Stream Stream
}

// Searcher is an index.Searcher over the members of a fan-out.
type Searcher struct {
	local Peer
	peers func() []Peer
	opts  Options
	log   *slog.Logger
	chunk int // maxChunk; tests lower it to page through members in many chunks
}

var _ index.Searcher = (*Searcher)(nil)

// maxChunk is the most hits asked of a member at once: what the HTTP API
// returns per request (web.ParseQuery). Deeper pages take several.
const maxChunk = 1000

// New returns the fan-out over local and the peers, which peers returns
// at each request (the live members but this one; nil: none).
func New(local index.Searcher, peers func() []Peer, opts Options) *Searcher {
	if opts.LocalName == "" {
		opts.LocalName = "local"
	}
	if opts.PeerTimeout <= 0 {
		opts.PeerTimeout = index.DefaultSearchTimeout + time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if peers == nil {
		peers = func() []Peer { return nil }
	}
	return &Searcher{local: Peer{Name: opts.LocalName, Searcher: local}, peers: peers, opts: opts, log: opts.Logger, chunk: maxChunk}
}

func (f *Searcher) members() []Peer { return append([]Peer{f.local}, f.peers()...) }

// each calls fn for every member at once, each call bounded by the peer
// timeout, and waits for all.
func each[T any](ctx context.Context, f *Searcher, ms []Peer, fn func(context.Context, index.Searcher) (T, error)) ([]T, []error) {
	out := make([]T, len(ms))
	errs := make([]error, len(ms))
	var wg sync.WaitGroup
	for i, m := range ms {
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, f.opts.PeerTimeout)
			defer cancel()
			out[i], errs[i] = fn(cctx, m.Searcher)
		})
	}
	wg.Wait()
	return out, errs
}

// failed is the error of a search no member answered, or of a query the
// local searcher refused as bad (every member would).
func failed(ms []Peer, errs []error) error {
	if errs[0] != nil && index.IsBadQuery(errs[0]) {
		return errs[0]
	}
	var all []error
	for i, err := range errs {
		if err == nil {
			return nil
		}
		all = append(all, fmt.Errorf("%s: %w", ms[i].Name, err))
	}
	return fmt.Errorf("no analyzer answered: %w", errors.Join(all...))
}

// Search asks every member for its part of q and merges them: hits in
// index.Order, paged by From or by cursor, totals summed, facets summed
// term by term, histograms (cut over one range) summed bucket by bucket.
// A member that fails is named in Result.Partial; only when none answers
// (or the query is bad) is the search an error.
func (f *Searcher) Search(ctx context.Context, q index.Query) (index.Result, error) {
	start := time.Now()
	size, err := index.PageSize(q)
	if err != nil {
		return index.Result{}, err
	}
	from := max(q.From, 0)
	ms := f.members()
	var res index.Result
	if q.Histogram > 0 && (q.Since.IsZero() || q.Until.IsZero()) && q.HistogramSince.IsZero() && q.HistogramUntil.IsZero() {
		// Every member cuts the same buckets only over one range.
		lo, hi, errs := f.bounds(ctx, ms)
		if err := failed(ms, errs); err != nil {
			return index.Result{}, err
		}
		if !lo.IsZero() {
			q.HistogramSince, q.HistogramUntil = lo, hi.Add(time.Nanosecond)
		}
	}
	first := q
	first.From = 0
	first.Size = -1
	if size > 0 {
		first.Size = min(from+size, f.chunk)
	}
	results, errs := each(ctx, f, ms, func(ctx context.Context, s index.Searcher) (index.Result, error) {
		return s.Search(ctx, first)
	})
	if err := failed(ms, errs); err != nil {
		return index.Result{}, err
	}
	var streams []*stream
	var facets []map[string][]index.FacetTerm
	var hists [][]index.Bucket
	for i, r := range results {
		if errs[i] != nil {
			f.log.Debug("fan-out member did not answer", "member", ms[i].Name, "err", errs[i])
			res.Partial = append(res.Partial, fmt.Sprintf("%s: %v", ms[i].Name, errs[i]))
			continue
		}
		res.Total += r.Total
		facets = append(facets, r.Facets)
		hists = append(hists, r.Histogram)
		for _, e := range r.Errors {
			res.Errors = append(res.Errors, fmt.Sprintf("%s: %s", ms[i].Name, e))
		}
		streams = append(streams, newStream(ms[i], first, r))
	}
	f.coverage(ctx, &res, ms, results, errs)
	if q.Facets {
		res.Facets = index.MergeFacets(facets...)
	}
	if q.Histogram > 0 {
		var skew []string
		res.Histogram, skew = mergeHistograms(index.HistogramBuckets(q), hists)
		res.Errors = append(res.Errors, skew...)
	}
	res.Hits = []index.Hit{}
	if size > 0 {
		m := merger{f: f, q: q, streams: streams, order: index.Order(q), seen: map[string]bool{}}
		hits, more := m.run(ctx, from+size)
		res.Partial = append(res.Partial, m.partial...)
		if len(hits) > from {
			res.Hits = hits[from:]
		}
		if more && len(res.Hits) > 0 {
			res.Next = index.CursorAfter(q, res.Hits[len(res.Hits)-1])
		}
		index.ArrangePage(q, res.Hits)
	}
	res.Took = time.Since(start)
	return res, nil
}

// mergeHistograms sums histograms into layout by bucket start (or into
// the first one's, when the range was not known here), and says which
// buckets lined up with none of layout's.
func mergeHistograms(layout []index.Bucket, hists [][]index.Bucket) ([]index.Bucket, []string) {
	for _, h := range hists {
		if layout == nil && len(h) > 0 {
			layout = slices.Clone(h)
			for i := range layout {
				layout[i].Count = 0
			}
		}
	}
	at := make(map[time.Time]int, len(layout))
	for i, b := range layout {
		at[b.Start.UTC()] = i
	}
	var skew []string
	for _, h := range hists {
		for _, b := range h {
			i, ok := at[b.Start.UTC()]
			if !ok {
				skew = append(skew, fmt.Sprintf("histogram: a bucket at %s of %d events lines up with none of the others", b.Start.Format(time.RFC3339Nano), b.Count))
				continue
			}
			layout[i].Count += b.Count
		}
	}
	return layout, skew
}

// Context returns the context of the event id from the first member that
// holds it.
func (f *Searcher) Context(ctx context.Context, id string, n int) (index.Context, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ms := f.members()
	type answer struct {
		i   int
		c   index.Context
		err error
	}
	answers := make(chan answer, len(ms))
	for i, m := range ms {
		go func() {
			cctx, cancelPeer := context.WithTimeout(ctx, f.opts.PeerTimeout)
			defer cancelPeer()
			c, err := m.Searcher.Context(cctx, id, n)
			answers <- answer{i, c, err}
		}()
	}
	var errs []error
	for range ms {
		a := <-answers
		if a.err == nil {
			return a.c, nil // the others end with ctx
		}
		if !errors.Is(a.err, index.ErrNotFound) {
			errs = append(errs, fmt.Errorf("%s: %w", ms[a.i].Name, a.err))
		}
	}
	if len(errs) > 0 {
		return index.Context{}, fmt.Errorf("context of %s: not found on the analyzers that answered, and some did not: %w", id, errors.Join(errs...))
	}
	return index.Context{}, fmt.Errorf("context: %w: %s", index.ErrNotFound, id)
}

// Bounds returns the oldest and newest event times of all members that
// answered (an error only when none did).
func (f *Searcher) Bounds(ctx context.Context) (lo, hi time.Time, err error) {
	ms := f.members()
	lo, hi, errs := f.bounds(ctx, ms)
	return lo, hi, failed(ms, errs)
}

func (f *Searcher) bounds(ctx context.Context, ms []Peer) (lo, hi time.Time, errs []error) {
	type span struct{ lo, hi time.Time }
	spans, errs := each(ctx, f, ms, func(ctx context.Context, s index.Searcher) (span, error) {
		lo, hi, err := s.Bounds(ctx)
		return span{lo, hi}, err
	})
	for i, s := range spans {
		if errs[i] != nil {
			continue
		}
		if !s.lo.IsZero() && (lo.IsZero() || s.lo.Before(lo)) {
			lo = s.lo
		}
		if !s.hi.IsZero() && (hi.IsZero() || s.hi.After(hi)) {
			hi = s.hi
		}
	}
	return lo, hi, errs
}

// DocCount is the sum of the members' counts; the error names those that
// did not answer (the sum is then of the others).
func (f *Searcher) DocCount() (uint64, error) {
	ms := f.members()
	counts, errs := each(context.Background(), f, ms, func(_ context.Context, s index.Searcher) (uint64, error) {
		return s.DocCount()
	})
	var sum uint64
	var all []error
	for i, n := range counts {
		if errs[i] != nil {
			all = append(all, fmt.Errorf("%s: %w", ms[i].Name, errs[i]))
			continue
		}
		sum += n
	}
	return sum, errors.Join(all...)
}

// Findings are the local searcher's (serve replaces them with the
// cluster's).
func (f *Searcher) Findings() []finding.Finding { return f.local.Searcher.Findings() }

// Stats are the local searcher's: what this analyzer indexes.
func (f *Searcher) Stats() index.Stats { return f.local.Searcher.Stats() }
