package server

import (
	"context"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// fetchBytes bounds one fetch from the stream: what serve holds unacked at
// once is one fetch plus what waits for the index flush. Fetching 1,000
// messages at a time (780 MB of shipper batches) held messages longer than
// the ack wait, and JetStream delivered most of them again.
const fetchBytes = 4 << 20

// heldMsgs are the messages serve took from the stream and has not
// acknowledged yet; keepAlive tells JetStream they are in progress so that
// a backlog slower to index than the ack wait is not redelivered.
type heldMsgs struct {
	mu   sync.Mutex
	msgs map[jetstream.Msg]time.Time // -> last time JetStream heard of it
}

func (h *heldMsgs) add(msgs []jetstream.Msg) {
	now := time.Now()
	h.mu.Lock()
	if h.msgs == nil {
		h.msgs = map[jetstream.Msg]time.Time{}
	}
	for _, m := range msgs {
		h.msgs[m] = now
	}
	h.mu.Unlock()
}

func (h *heldMsgs) done(msgs []jetstream.Msg) {
	h.mu.Lock()
	for _, m := range msgs {
		delete(h.msgs, m)
	}
	h.mu.Unlock()
}

// keepAlive marks the messages held for a third of the ack wait as in
// progress, until ctx ends.
func (h *heldMsgs) keepAlive(ctx context.Context, ackWait time.Duration) {
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

// consume fetches messages by bytes and hands them to handle until ctx
// ends. A reader takes each message off the fetch as soon as it arrives and
// holds it (kept alive until the acker acknowledged it); the handler takes
// them in order. The next fetch waits until the last one is handled, so what
// is held beyond the index's own lag is one fetch.
func (s *server) consume(ctx context.Context, cons jetstream.Consumer) error {
	work := make(chan jetstream.Msg, 4096)
	var handled sync.WaitGroup
	// A fetch smaller than a message would never deliver it.
	size := max(fetchBytes, 2*int(s.nc.MaxPayload()))
	go func() {
		defer close(work)
		for ctx.Err() == nil {
			batch, err := cons.FetchBytes(size, jetstream.FetchMaxWait(time.Second))
			if err != nil {
				if ctx.Err() == nil {
					s.log.Warn("fetch", "err", err)
					sleepCtx(ctx, time.Second)
				}
				continue
			}
			for m := range batch.Messages() {
				s.held.add([]jetstream.Msg{m})
				handled.Add(1)
				work <- m
			}
			handled.Wait()
		}
	}()
	for m := range work {
		if ctx.Err() == nil { // stopping: the rest is redelivered to the next run
			s.handle(m)
		}
		handled.Done()
	}
	return nil
}
