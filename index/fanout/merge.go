package fanout

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/faultline/faultline/index"
)

// stream is one member's hits in index.Order, fetched a chunk at a time.
type stream struct {
	peer Peer
	q    index.Query // the query of the member's first chunk
	buf  []index.Hit // fetched, not yet merged
	next string      // the member's cursor past buf; empty: no more
}

func newStream(p Peer, q index.Query, r index.Result) *stream {
	s := &stream{peer: p, q: q}
	s.take(r)
	return s
}

// take keeps r's hits, put back in index.Order: an index shows the hits of
// one time by file and line (index.ArrangePage), not in the order it
// pages by.
func (s *stream) take(r index.Result) {
	hits := slices.Clone(r.Hits)
	slices.SortStableFunc(hits, index.Order(s.q))
	s.buf, s.next = hits, r.Next
}

// merger merges streams into one page.
type merger struct {
	f       *Searcher
	q       index.Query
	streams []*stream
	order   func(a, b index.Hit) int
	seen    map[string]bool // event IDs merged
	partial []string
}

// run returns the first n hits of all streams in order, each event once,
// and whether more follow.
func (m *merger) run(ctx context.Context, n int) ([]index.Hit, bool) {
	var out []index.Hit
	for len(out) < n {
		m.refill(ctx, n-len(out))
		best := -1
		for i, s := range m.streams {
			if len(s.buf) > 0 && (best < 0 || m.order(s.buf[0], m.streams[best].buf[0]) < 0) {
				best = i
			}
		}
		if best < 0 {
			return out, false
		}
		s := m.streams[best]
		h := s.buf[0]
		s.buf = s.buf[1:]
		if m.seen[h.ID] { // the same event on two members (in one time, one place in the order)
			continue
		}
		m.seen[h.ID] = true
		out = append(out, h)
	}
	for _, s := range m.streams {
		s.buf = slices.DeleteFunc(s.buf, func(h index.Hit) bool { return m.seen[h.ID] })
		if len(s.buf) > 0 || s.next != "" {
			return out, true
		}
	}
	return out, false
}

// refill fetches, at once, the next chunk of every stream that has merged
// all it fetched and has more, up to want hits. A member that fails now
// ends its stream and is named in partial.
func (m *merger) refill(ctx context.Context, want int) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, s := range m.streams {
		if len(s.buf) > 0 || s.next == "" {
			continue
		}
		q := s.q
		q.After, q.Size, q.Facets, q.Histogram = s.next, min(want, m.f.chunk), false, 0
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, m.f.opts.PeerTimeout)
			defer cancel()
			r, err := s.peer.Searcher.Search(cctx, q)
			if err != nil {
				s.buf, s.next = nil, ""
				mu.Lock()
				m.partial = append(m.partial, fmt.Sprintf("%s: %v (its hits past %d merged ones are missing)", s.peer.Name, err, len(m.seen)))
				mu.Unlock()
				return
			}
			s.take(r)
		})
	}
	wg.Wait()
}
