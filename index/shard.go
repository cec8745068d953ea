package index

import (
	"fmt"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/document"
)

// shard is one Bleve index with its own writer goroutine. Bleve takes one
// batch at a time per index; several shards let batches of different
// shards analyse and introduce segments in parallel.
type shard struct {
	x    *Index
	n    int
	idx  bleve.Index
	in   chan shardOp
	done chan struct{}
}

// shardOp is an event to index, or (doc nil) a flush request to ack.
type shardOp struct {
	doc     *document.Document
	flushed chan error
}

func (s *shard) run() {
	defer close(s.done)
	batch := s.idx.NewBatch()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	timerOn := false
	var lastErr error

	execute := func() {
		if timerOn {
			timer.Stop()
			timerOn = false
		}
		n := batch.Size()
		if n == 0 {
			return
		}
		start := time.Now()
		if err := s.idx.Batch(batch); err != nil {
			s.x.errs.Add(1)
			lastErr = fmt.Errorf("index shard %d: batch of %d: %w", s.n, n, err)
			s.x.log.Error("index batch failed", "shard", s.n, "docs", n, "err", err)
		} else {
			s.x.indexed.Add(uint64(n))
			s.x.batches.Add(1)
			s.x.log.Debug("index batch", "shard", s.n, "docs", n, "took", time.Since(start))
		}
		batch.Reset()
	}

	for {
		select {
		case op, ok := <-s.in:
			if !ok {
				execute()
				s.persist()
				return
			}
			if op.flushed != nil {
				execute()
				op.flushed <- lastErr
				lastErr = nil
				continue
			}
			if err := batch.IndexAdvanced(op.doc); err != nil {
				s.x.errs.Add(1)
				s.x.log.Error("index event", "id", op.doc.ID(), "err", err)
				continue
			}
			if batch.Size() >= s.x.opts.BatchSize {
				execute()
			} else if !timerOn {
				timer.Reset(s.x.opts.FlushInterval)
				timerOn = true
			}
		case <-timer.C:
			timerOn = false
			execute()
		}
	}
}

// persist waits until everything indexed is on disk. With unsafe_batch,
// scorch's Close does not wait for the persister, so without this the last
// batches before Close would be lost. An empty batch carrying a persisted
// callback is the barrier.
func (s *shard) persist() {
	if s.x.opts.Safe {
		return
	}
	done := make(chan error, 1)
	b := s.idx.NewBatch()
	b.SetPersistedCallback(func(err error) { done <- err })
	if err := s.idx.Batch(b); err != nil {
		s.x.log.Error("index persist barrier", "shard", s.n, "err", err)
		return
	}
	select {
	case err := <-done:
		if err != nil {
			s.x.log.Error("index persist", "shard", s.n, "err", err)
		}
	case <-time.After(10 * time.Minute):
		s.x.log.Error("index persist: timed out", "shard", s.n)
	}
}
