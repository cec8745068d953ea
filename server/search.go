package server

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/faultline/faultline/cluster"
	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/index"
	"github.com/faultline/faultline/index/fanout"
	"github.com/faultline/faultline/transport"
)

// searchSwitch is what the HTTP API searches: this analyzer's index, until
// it joins a cluster and the search fans out across the members (the HTTP
// server is up before that is known).
type searchSwitch struct {
	local index.Searcher
	cur   atomic.Pointer[index.Searcher]
}

func (s *searchSwitch) get() index.Searcher {
	if p := s.cur.Load(); p != nil {
		return *p
	}
	return s.local
}

func (s *searchSwitch) set(x index.Searcher) { s.cur.Store(&x) }

func (s *searchSwitch) Search(ctx context.Context, q index.Query) (index.Result, error) {
	return s.get().Search(ctx, q)
}

func (s *searchSwitch) Context(ctx context.Context, id string, n int) (index.Context, error) {
	return s.get().Context(ctx, id, n)
}

func (s *searchSwitch) Bounds(ctx context.Context) (lo, hi time.Time, err error) {
	return s.get().Bounds(ctx)
}

func (s *searchSwitch) Findings() []finding.Finding { return s.get().Findings() }
func (s *searchSwitch) DocCount() (uint64, error)   { return s.get().DocCount() }
func (s *searchSwitch) Stats() index.Stats          { return s.get().Stats() }

var _ index.Searcher = (*searchSwitch)(nil)

// useClusterSearch makes the API search every live member: this one's own
// partitions here, each peer's over its HTTP API (local=1, the same token).
// A peer answers for the partitions it holds a lease on, so the members'
// parts are disjoint; a partition nobody answers for in full (unowned in
// a take-over, still being indexed by its new owner, or held by a member
// that did not answer) is named in the result's partial and missing.
func (s *server) useClusterSearch(node *cluster.Node, st jetstream.Stream, parts int) {
	local := fanout.Restrict(s.idx, node.Owned, func() []index.Gap { return s.reindexing(node) })
	s.searchLocal.set(local)
	client := &http.Client{Timeout: 30 * time.Second}
	var remotes sync.Map // base URL -> index.Searcher
	peers := func() []fanout.Peer {
		var out []fanout.Peer
		for _, m := range node.Members() {
			if m.ID == node.ID() || m.HTTP == "" {
				continue
			}
			r, ok := remotes.Load(m.HTTP)
			if !ok {
				r, _ = remotes.LoadOrStore(m.HTTP, fanout.Remote(m.HTTP, s.cfg.HTTPToken, client))
			}
			out = append(out, fanout.Peer{Name: m.ID, Searcher: r.(index.Searcher), Owns: m.Owned})
		}
		return out
	}
	opts := fanout.Options{LocalName: node.ID(), Logger: s.log, Stream: &partStream{st: st, n: parts}}
	if s.cfg.SearchTimeout > 0 {
		// A peer stops at its own --search-timeout (the same on every
		// member): wait that long and a second for it to say so.
		opts.PeerTimeout = s.cfg.SearchTimeout + time.Second
	}
	s.search.set(fanout.New(local, peers, opts))
}

// reindexing are the partitions owned here that this analyzer's index
// does not hold in full yet: taken over, and not indexed up to the last
// message the partition had then.
func (s *server) reindexing(node *cluster.Node) []index.Gap {
	var out []index.Gap
	for _, p := range node.Owned() {
		pl := s.lanes.get(p)
		if pl == nil { // its lane is starting
			out = append(out, index.Gap{Partition: p, Reason: index.GapReindexing})
			continue
		}
		if s.progress.get(p) >= pl.target {
			continue
		}
		g := index.Gap{Partition: p, Reason: index.GapReindexing}
		if pl.Last() > 0 {
			g.Messages = max(pl.Pending(), 1)
		}
		out = append(out, g)
	}
	return out
}

// partStream counts the messages of each partition (fanout.Stream), at
// most once a second: only a result that lacks partitions asks.
type partStream struct {
	st jetstream.Stream
	n  int

	mu   sync.Mutex
	at   time.Time
	msgs []uint64
}

func (p *partStream) Partitions() int { return p.n }

func (p *partStream) Messages(ctx context.Context) []uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.msgs != nil && time.Since(p.at) < time.Second {
		return p.msgs
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	info, err := p.st.Info(ctx, jetstream.WithSubjectFilter(transport.PartsPrefix+">"))
	if err != nil {
		return nil
	}
	msgs := make([]uint64, p.n)
	for subj, n := range info.State.Subjects {
		if part, ok := transport.PartitionOfSubject(subj); ok && part < p.n {
			msgs[part] += n
		}
	}
	p.msgs, p.at = msgs, time.Now()
	return msgs
}

// reindexingParts are the partitions of reindexing, for this member's
// heartbeats.
func (s *server) reindexingParts() []int {
	n := s.node.Load()
	if n == nil {
		return nil
	}
	var out []int
	for _, g := range s.reindexing(n) {
		out = append(out, g.Partition)
	}
	return out
}
