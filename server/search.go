package server

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/faultline/faultline/cluster"
	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/index"
	"github.com/faultline/faultline/index/fanout"
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
// parts are disjoint.
func (s *server) useClusterSearch(node *cluster.Node) {
	local := fanout.Restrict(s.idx, node.Owned)
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
			out = append(out, fanout.Peer{Name: m.ID, Searcher: r.(index.Searcher)})
		}
		return out
	}
	opts := fanout.Options{LocalName: node.ID(), Logger: s.log}
	if s.cfg.SearchTimeout > 0 {
		// A peer stops at its own --search-timeout (the same on every
		// member): wait that long and a second for it to say so.
		opts.PeerTimeout = s.cfg.SearchTimeout + time.Second
	}
	s.search.set(fanout.New(local, peers, opts))
}
