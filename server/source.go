package server

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/faultline/faultline/lane"
	"github.com/faultline/faultline/transport"
)

// ordered reads an ordered consumer of the stream as a lane.Source: the
// warm-up replay, a reload's replay, a partition's lane. A goroutine takes
// the iterator's messages so that Read can give up when its context ends
// without losing one.
type ordered struct {
	it    jetstream.MessagesContext
	msgs  chan jetstream.Msg
	err   chan error
	done  chan struct{}
	valid func() bool        // nil, or false once reading must stop (a lease no longer certain)
	ack   func(seq uint64)   // nil, or what settling a batch means (a partition's index progress)
	stop  context.CancelFunc // of the context the consumer was made with
	after func() bool        // stops the AfterFunc that stops the iterator
}

// openOrdered starts reading st with occ until ctx ends or Close.
func openOrdered(ctx context.Context, st jetstream.Stream, occ jetstream.OrderedConsumerConfig, valid func() bool, ack func(seq uint64)) (*ordered, error) {
	oc, err := st.OrderedConsumer(ctx, occ)
	if err != nil {
		return nil, fmt.Errorf("consumer: %w", err)
	}
	it, err := oc.Messages()
	if err != nil {
		return nil, err
	}
	o := &ordered{it: it, msgs: make(chan jetstream.Msg), err: make(chan error, 1), done: make(chan struct{}), valid: valid, ack: ack}
	o.after = context.AfterFunc(ctx, it.Stop)
	go o.pump()
	return o, nil
}

func (o *ordered) pump() {
	for {
		msg, err := o.it.Next()
		if err != nil {
			o.err <- err
			return
		}
		select {
		case o.msgs <- msg:
		case <-o.done:
			return
		}
	}
}

// Read returns the next message as a batch.
func (o *ordered) Read(ctx context.Context) (transport.Batch, transport.AckFunc, error) {
	select {
	case <-ctx.Done():
		return transport.Batch{}, nil, ctx.Err()
	case err := <-o.err:
		o.err <- err // every later Read fails the same way
		return transport.Batch{}, nil, err
	case msg := <-o.msgs:
		if o.valid != nil && !o.valid() {
			// Another member may take it from now on: stop before it can.
			return transport.Batch{}, nil, lane.ErrStopped
		}
		b := transport.BatchOf(msg)
		var ack transport.AckFunc
		if o.ack != nil {
			seq := b.Seq
			ack = func(context.Context, error) error { o.ack(seq); return nil }
		}
		return b, ack, nil
	}
}

// Close stops reading.
func (o *ordered) Close() {
	select {
	case <-o.done:
		return
	default:
	}
	close(o.done)
	o.after()
	o.it.Stop()
}

// fromSeq is occ reading from stream sequence seq on (from the first when
// seq is 1 or less).
func fromSeq(occ jetstream.OrderedConsumerConfig, seq uint64) jetstream.OrderedConsumerConfig {
	if seq > 1 {
		occ.DeliverPolicy, occ.OptStartSeq = jetstream.DeliverByStartSequencePolicy, seq
	}
	return occ
}
