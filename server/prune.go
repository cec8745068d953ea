package server

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/faultline/faultline/transport"
)

// The index is a cache of the log stream, with the stream's retention:
// what the stream no longer holds leaves the index too, in both modes, so
// that a search shows the same history on every member, before a
// partition moves and after (its new owner indexes it from the stream).
// On a cluster a member also drops its copy of a partition another member
// holds in full: the copy is never searched (a member answers for the
// partitions it owns) and would be stale if the partition came back.

// pruner is what the index offers for it (index.Index).
type pruner interface {
	Mark(label func() (uint64, error)) error
	PruneTo(floor uint64) (int, error)
	DropPartition(ctx context.Context, p int) (int, error)
}

// pruneEvery is how often the index is marked and pruned: a tenth of the
// stream's age limit, between 500 ms and a minute.
func pruneEvery(maxAge time.Duration) time.Duration {
	if maxAge <= 0 {
		return time.Minute
	}
	return min(max(maxAge/10, 500*time.Millisecond), time.Minute)
}

// startPruner marks the index with the stream's last sequence and drops
// what the stream's first sequence left behind, at start and then every
// pruneEvery; on a cluster it drops the copies of moved partitions too.
func (s *server) startPruner(ctx context.Context, js jetstream.JetStream) (stop func()) {
	x, ok := s.idx.(pruner)
	if !ok {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		every := max(s.cfg.PruneEvery, 0)
		if every == 0 {
			every = time.Minute
		}
		for {
			every = s.prune(ctx, js, x, every)
			if s.node.Load() != nil {
				s.dropMoved(ctx, x)
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(every):
			}
		}
	})
	return func() { cancel(); wg.Wait() }
}

// prune is one pass; it returns when the next is due.
func (s *server) prune(ctx context.Context, js jetstream.JetStream, x pruner, every time.Duration) time.Duration {
	var info *jetstream.StreamInfo
	err := x.Mark(func() (uint64, error) {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		st, err := js.Stream(cctx, transport.StreamName)
		if err != nil {
			return 0, err
		}
		if info, err = st.Info(cctx); err != nil {
			return 0, err
		}
		return info.State.LastSeq, nil
	})
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("index not marked for pruning; trying again", "err", err)
		}
		return every
	}
	n, err := x.PruneTo(info.State.FirstSeq)
	if err != nil {
		s.log.Warn("index not pruned; trying again", "err", err)
	}
	if n > 0 {
		s.pruned.Add(uint64(n))
		s.log.Info("index pruned to the stream's retention", "records", n, "stream_first_seq", info.State.FirstSeq)
	}
	if s.cfg.PruneEvery > 0 {
		return s.cfg.PruneEvery
	}
	return pruneEvery(info.Config.MaxAge)
}

// dropMoved drops this analyzer's copy of every partition it does not own
// that another live member owns and holds in full (not re-indexing, as its
// last heartbeat says). Its progress is forgotten first: taken back, the
// partition is indexed again from the stream.
func (s *server) dropMoved(ctx context.Context, x pruner) {
	n := s.node.Load()
	members := n.Members()
	for p := range n.Partitions() {
		if s.progress.get(p) == 0 {
			continue // nothing of it here
		}
		holder := ""
		for _, m := range members {
			if m.ID != n.ID() && slices.Contains(m.Owned, p) && !slices.Contains(m.Reindexing, p) {
				holder = m.ID
			}
		}
		if holder == "" {
			continue
		}
		s.dropMu.Lock()
		if slices.Contains(n.Owned(), p) || s.lanes.get(p) != nil {
			s.dropMu.Unlock()
			continue // taken back meanwhile
		}
		s.progress.reset(p)
		err := s.progress.save()
		var dropped int
		if err == nil {
			dropped, err = x.DropPartition(ctx, p)
		}
		s.dropMu.Unlock()
		if err != nil {
			s.log.Warn("copy of a moved partition not dropped; trying again", "partition", p, "err", err)
			continue
		}
		s.pruned.Add(uint64(dropped))
		s.log.Info("copy of a moved partition dropped", "partition", p, "owner", holder, "records", dropped)
	}
}
