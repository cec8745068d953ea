package lane

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/faultline/faultline/transport"
)

// Committer settles the batches of the lanes of one index after an index
// flush, so that an acknowledged batch is always in the index (Benthos
// style: the acknowledgement travels with the batch until its work is
// done). After each flush that settled something it calls OnCommit (serve
// saves the lanes' checkpoints there: what the engines observed is in the
// stream, so starting there again is safe).
type Committer struct {
	flush    func(ctx context.Context) error
	interval time.Duration
	onCommit func(ctx context.Context)
	log      *slog.Logger

	acks      chan transport.AckFunc
	unindexed atomic.Int64 // records handed to the index and not yet known flushed
}

// NewCommitter flushes with flush at least every interval (and after 1,000
// batches).
func NewCommitter(flush func(ctx context.Context) error, interval time.Duration, onCommit func(ctx context.Context), log *slog.Logger) *Committer {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if onCommit == nil {
		onCommit = func(context.Context) {}
	}
	return &Committer{flush: flush, interval: interval, onCommit: onCommit, log: log, acks: make(chan transport.AckFunc, 4096)}
}

// Unindexed is how many records were handed to the index and are not yet
// known flushed (the index lag).
func (c *Committer) Unindexed() int64 { return c.unindexed.Load() }

// add queues a batch's acknowledgement (nil: nothing to settle) for n
// records; it waits while the committer is 4,096 batches behind.
func (c *Committer) add(ctx context.Context, ack transport.AckFunc, n int) {
	c.unindexed.Add(int64(n))
	if ack == nil {
		ack = func(context.Context, error) error { return nil }
	}
	select {
	case c.acks <- ack:
	case <-ctx.Done():
	}
}

// Start runs the committer until the returned stop is called (or ctx
// ends). What is not settled then is not acknowledged: it is read again by
// the next run.
func (c *Committer) Start(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { c.run(ctx) })
	return func() { cancel(); wg.Wait() }
}

func (c *Committer) run(ctx context.Context) {
	t := time.NewTicker(c.interval)
	defer t.Stop()
	var pending []transport.AckFunc
	commit := func() {
		if len(pending) == 0 {
			return
		}
		n := c.unindexed.Load()
		if err := c.flush(ctx); err != nil {
			c.log.Warn("index flush; acks delayed", "err", err)
			return
		}
		for _, ack := range pending {
			if err := ack(ctx, nil); err != nil {
				c.log.Warn("ack", "err", err)
			}
		}
		c.unindexed.Add(-n)
		pending = pending[:0]
		c.onCommit(ctx)
	}
	for {
		select {
		case <-ctx.Done():
			return
		case a := <-c.acks:
			pending = append(pending, a)
			if len(pending) >= 1000 {
				commit()
			}
		case <-t.C:
			commit()
		}
	}
}
