package shipper

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/faultline/faultline/transport"
)

// NATSOptions and StreamOptions are transport's: the analyzer takes the same.
type (
	NATSOptions   = transport.NATSOptions
	StreamOptions = transport.StreamOptions
)

// batch is one message: consecutive records of one file.
type batch struct {
	subject string
	body    []byte
	count   int
	msgID   string
	records int64     // for metrics
	readAt  time.Time // when its first record was read (serve's line-to-finding latency)
	onAck   func()
}

// Publisher is transport.Publisher with the shipper's metrics and a pool of
// batch bodies (a body goes back to the pool once its batch is stored).
type Publisher struct {
	tp       *transport.Publisher
	inFlight prometheus.Gauge
	bodies   sync.Pool
	bodyCap  int // capacity of a new body: a batch closes soon after the soft limit
	// publishAck times a batch from Publish to its acknowledgement.
	publishAck prometheus.Observer
}

// PublisherOptions tune the publisher.
type PublisherOptions struct {
	MaxInFlight int           // batches awaiting a PubAck (default 16)
	AckTimeout  time.Duration // a PubAck not received by then means retry (default 5s)
	Name        string        // connection name shown by the server
	Compression string        // of the batches: "s2" (default), "zstd" or "none"
	Shipper     string        // this process's identity, on every batch (transport.HeaderShipper)
}

// Connect connects to NATS (retrying in the background if the server is not
// up yet), waits until connected or ctx is done, and makes sure the stream
// exists.
func Connect(ctx context.Context, no NATSOptions, so StreamOptions, po PublisherOptions, log *slog.Logger, m *Metrics, h *Health) (*Publisher, error) {
	tp, err := transport.Connect(ctx, no, so, transport.PublisherOptions{
		MaxInFlight: po.MaxInFlight, AckTimeout: po.AckTimeout, Name: po.Name, Log: log, Compression: po.Compression, Shipper: po.Shipper,
		Hooks: transport.PublishHooks{
			Disconnected: func(err error) { h.set("nats", "disconnected: "+err.Error()+"; reconnecting") },
			Reconnected:  func() { m.reconnects.Inc(); h.clear("nats") },
			WindowFull:   func() { m.windowFull.Inc() },
			Stored: func(msg *transport.Message) {
				m.batches.Inc()
				m.records.Add(float64(msg.Count))
				m.bytes.Add(float64(msg.Sent))
				h.clear("publish")
			},
			Duplicate: func(*transport.Message) { m.duplicates.Inc() },
			Failed: func(_ *transport.Message, err error) {
				m.publishErrors.Inc()
				h.set("publish", "failing: "+err.Error()+"; retrying (reading stops when the window is full)")
			},
		},
	})
	if err != nil {
		return nil, err
	}
	m.dupWindow.Set(tp.DuplicateWindow().Seconds())
	return &Publisher{tp: tp, publishAck: m.stages.publishAck, inFlight: m.inFlight}, nil
}

// MaxPayload is the server's limit on a message, read from the connection.
func (p *Publisher) MaxPayload() int { return p.tp.MaxPayload() }

// body returns a buffer for a batch body, recycled after the ack: one from
// the pool, else a new one of about hint bytes (a file's last batch size;
// small for the first), which grows as records are appended.
func (p *Publisher) body(hint int) []byte {
	if b, ok := p.bodies.Get().(*[]byte); ok {
		return (*b)[:0]
	}
	return make([]byte, 0, min(max(hint, 4<<10), p.bodyCap))
}

// Publish sends b, blocking while the in-flight window is full or until ctx
// is done. b.onAck runs once the server stored (or had already stored) the
// batch. Once accepted, b is retried until acknowledged or until Wait gives
// up or Close, whatever happens to ctx.
func (p *Publisher) Publish(ctx context.Context, b *batch) error {
	m := &transport.Message{Subject: b.subject, Body: b.body, Count: b.count, MsgID: b.msgID, ReadAt: b.readAt}
	sent := time.Now()
	p.inFlight.Inc()
	err := p.tp.Publish(ctx, m, func() {
		p.inFlight.Dec()
		p.publishAck.Observe(time.Since(sent).Seconds())
		b.onAck()
		body := b.body
		b.body = nil
		p.bodies.Put(&body)
	})
	if err != nil {
		p.inFlight.Dec()
	}
	return err
}

// DuplicateWindow is the stream's duplicate window.
func (p *Publisher) DuplicateWindow() time.Duration { return p.tp.DuplicateWindow() }

// Wait waits until every batch handed to Publish is acknowledged; when ctx
// ends first it gives the rest up (their offsets stay unsaved, so they are
// sent again after a restart).
func (p *Publisher) Wait(ctx context.Context) error { return p.tp.Wait(ctx) }

// Close gives up the deliveries still running and closes the connection.
func (p *Publisher) Close() { p.tp.Close() }
