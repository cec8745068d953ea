package transport

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/faultline/faultline/parsers"
)

// Batch is one message of the stream, decoded.
type Batch struct {
	Subject string
	Seq     uint64 // stream sequence
	// Pending is how many messages of the consumer's subjects were left
	// after this one when it was delivered (the consumer's lag).
	Pending uint64
	Records []parsers.Record
	// Stored is when JetStream stored the message, ReadAt when the shipper
	// read its first record (zero when the shipper did not say), Decode
	// the time Decode took: the stages of a batch's way to the analyzer.
	Stored time.Time
	ReadAt time.Time
	Decode time.Duration
	// Shipper is the identity of the shipper process that published it
	// (HeaderShipper; "" when it did not say: a receiver, an older shipper).
	Shipper string
	// Err says the body was not all readable: Records holds the records
	// before the fault. A redelivery would fail the same way, so such a
	// batch is still meant to be acknowledged.
	Err error
}

// AckFunc settles a batch: nil acknowledges it, an error hands it back for
// redelivery. Until then the batch is kept alive (marked in progress), so
// work slower than the ack wait does not get it redelivered.
type AckFunc func(ctx context.Context, err error) error

// ConsumerOptions tune a Consumer.
type ConsumerOptions struct {
	Durable string        // durable consumer name
	AckWait time.Duration // JetStream redelivers what is not acked (or kept alive) by then
	// FetchBytes bounds one fetch (default 4 MiB, and at least two
	// messages' worth): what a reader holds unacknowledged is one fetch
	// plus what its acks wait for.
	FetchBytes int
	MaxPayload int // the server's message limit
	Log        *slog.Logger
}

// DefaultFetchBytes is one fetch: fetching 1,000 messages at a time (780 MB
// of shipper batches) held messages longer than the ack wait, and
// JetStream delivered most of them again.
const DefaultFetchBytes = 4 << 20

// Consumer reads batches from a durable pull consumer of the stream, by
// bytes, with explicit acks. A background reader takes each message off the
// fetch as soon as it arrives and keeps it alive until its AckFunc is
// called; the next fetch starts once the previous one was all read.
type Consumer struct {
	cons jetstream.Consumer
	opts ConsumerOptions
	held held
	work chan jetstream.Msg
	// unread counts the messages of the current fetch not yet done with:
	// one is done when Read is called again after returning it (the
	// caller finished with it); idle is signalled when it drops to 0.
	unread  atomic.Int64
	idle    chan struct{}
	handing bool // Read returned a message and has not been called since
	stop    context.CancelFunc
	done    chan struct{}
}

// NewConsumer creates or updates the durable consumer on st and starts
// reading; Close stops it.
func NewConsumer(ctx context.Context, st jetstream.Stream, o ConsumerOptions) (*Consumer, error) {
	if o.FetchBytes <= 0 {
		o.FetchBytes = DefaultFetchBytes
	}
	// A fetch smaller than a message would never deliver it.
	o.FetchBytes = max(o.FetchBytes, 2*o.MaxPayload)
	if o.AckWait <= 0 {
		o.AckWait = 30 * time.Second
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	cons, err := st.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable:       o.Durable,
		Description:   "Faultline analyzer",
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       o.AckWait,
		FilterSubject: StreamSubjects,
		MaxAckPending: 20000,
		DeliverPolicy: jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return nil, fmt.Errorf("consumer %s: %w", o.Durable, err)
	}
	rctx, stop := context.WithCancel(context.Background())
	c := &Consumer{cons: cons, opts: o, work: make(chan jetstream.Msg, 4096), idle: make(chan struct{}, 1),
		stop: stop, done: make(chan struct{})}
	go c.held.keepAlive(rctx, o.AckWait)
	go c.fetch(rctx)
	return c, nil
}

// JetStream is the underlying consumer (for its info: pending, ack pending).
func (c *Consumer) JetStream() jetstream.Consumer { return c.cons }

// fetch fetches by bytes and queues each message as it arrives; it waits for
// a fetch to be read before the next.
func (c *Consumer) fetch(ctx context.Context) {
	defer close(c.done)
	defer close(c.work)
	for ctx.Err() == nil {
		mb, err := c.cons.FetchBytes(c.opts.FetchBytes, jetstream.FetchMaxWait(time.Second))
		if err != nil {
			if ctx.Err() == nil {
				c.opts.Log.Warn("fetch", "err", err)
				sleepCtx(ctx, time.Second)
			}
			continue
		}
		for m := range mb.Messages() {
			c.held.add(m)
			c.unread.Add(1)
			select {
			case c.work <- m:
			case <-ctx.Done():
				return
			}
		}
		if err := mb.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) && ctx.Err() == nil {
			c.opts.Log.Debug("fetch ended", "err", err)
		}
		for c.unread.Load() > 0 {
			select {
			case <-c.idle:
			case <-ctx.Done():
				return
			}
		}
	}
}

// Read returns the next batch and its AckFunc, waiting for one until ctx
// ends. Batches come in stream order. Calling Read again says the caller is
// done with the previous batch (not that it is acknowledged): the next
// fetch waits for that, so what is held beyond the caller's own backlog of
// unacknowledged batches is one fetch. Not for concurrent use.
func (c *Consumer) Read(ctx context.Context) (Batch, AckFunc, error) {
	if c.handing {
		c.handing = false
		if c.unread.Add(-1) == 0 {
			select {
			case c.idle <- struct{}{}:
			default:
			}
		}
	}
	select {
	case <-ctx.Done():
		return Batch{}, nil, ctx.Err()
	case m, ok := <-c.work:
		if !ok {
			return Batch{}, nil, errors.New("transport: consumer closed")
		}
		c.handing = true
		return BatchOf(m), c.acker(m), nil
	}
}

func (c *Consumer) acker(m jetstream.Msg) AckFunc {
	return func(ctx context.Context, err error) error {
		c.held.done(m)
		if err != nil {
			return m.Nak()
		}
		return m.Ack()
	}
}

// Close stops reading; batches not acknowledged are redelivered later.
func (c *Consumer) Close() {
	c.stop()
	<-c.done
}

// held are the messages read from the stream and not settled yet;
// keepAlive tells JetStream they are in progress.
type held struct {
	mu   sync.Mutex
	msgs map[jetstream.Msg]time.Time // -> last time JetStream heard of it
}

func (h *held) add(m jetstream.Msg) {
	h.mu.Lock()
	if h.msgs == nil {
		h.msgs = map[jetstream.Msg]time.Time{}
	}
	h.msgs[m] = time.Now()
	h.mu.Unlock()
}

func (h *held) done(m jetstream.Msg) {
	h.mu.Lock()
	delete(h.msgs, m)
	h.mu.Unlock()
}

// keepAlive marks the messages held for a third of the ack wait as in
// progress, until ctx ends.
func (h *held) keepAlive(ctx context.Context, ackWait time.Duration) {
	every := ackWait / 3
	t := time.NewTicker(every / 2)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			var due []jetstream.Msg
			h.mu.Lock()
			for m, last := range h.msgs {
				if now.Sub(last) >= every {
					due = append(due, m)
					h.msgs[m] = now
				}
			}
			h.mu.Unlock()
			for _, m := range due {
				m.InProgress()
			}
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
