package transport

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Message is one batch to publish: an Encoder's payload of Count records
// and its de-duplication ID (MsgID). The publisher sends it framed
// (format 2, compressed).
type Message struct {
	Subject string
	Body    []byte
	Count   int
	MsgID   string
	ReadAt  time.Time // when the first record was read (zero: not sent)
	Sent    int       // bytes of the frame sent (set by Publish)
}

// PublishHooks observe a Publisher (metrics); nil hooks are skipped.
type PublishHooks struct {
	Disconnected func(err error) // the connection dropped (not by Close)
	Reconnected  func()
	WindowFull   func()                      // Publish had to wait for a free slot
	Stored       func(m *Message)            // the server acknowledged m
	Duplicate    func(m *Message)            // ... and had stored it before
	Failed       func(m *Message, err error) // one attempt failed; it is retried
}

// PublisherOptions tune the publisher.
type PublisherOptions struct {
	MaxInFlight int           // batches awaiting a PubAck (default 16)
	AckTimeout  time.Duration // a PubAck not received by then means retry (default 5s)
	Name        string        // connection name shown by the server
	Log         *slog.Logger
	Hooks       PublishHooks
	// Compression of the frames: "s2" (the default), "zstd" or "none".
	Compression string
	// Shipper is the publishing process's identity, sent on every message
	// as HeaderShipper ("": none).
	Shipper string
}

// Publisher publishes batches asynchronously to JetStream with a bounded
// number in flight. Publish blocks while the window is full, which is how
// readers stop reading when the server is slow or gone. A batch is retried
// unchanged (same body, same Nats-Msg-Id) until acknowledged, so a retry
// after a lost PubAck is dropped by the server's duplicate window.
type Publisher struct {
	nc     *nats.Conn
	js     jetstream.JetStream
	log    *slog.Logger
	hooks  PublishHooks
	framer *Framer
	frames sync.Pool // frame buffers, back after the ack
	// shipper is sent as HeaderShipper on every message ("": not sent).
	shipper string
	slots   chan struct{}
	wg      sync.WaitGroup
	// Deliveries live until Wait gives up or Close, not as long as the
	// caller's context: the last batch of stdin is published after stdin's
	// reader is done, and a stopping shipper still lets its in-flight
	// batches be acknowledged.
	life    context.Context
	stopAll context.CancelFunc

	mu        sync.Mutex
	failing   error         // current publish failure, logged once per change
	dialErr   error         // last failed connection attempt, for notConnected
	dupWindow time.Duration // the stream's, read when it was found
	// borrowed: the connection is the caller's (NewPublisher); Close
	// leaves it open.
	borrowed bool
}

// NewPublisher publishes over nc, a connection the caller made, keeps and
// closes (serve's receivers publish on serve's own connection, to the
// stream serve made). Hooks for the connection's events are the caller's.
func NewPublisher(nc *nats.Conn, po PublisherOptions) (*Publisher, error) {
	if po.MaxInFlight <= 0 {
		po.MaxInFlight = 16
	}
	if po.AckTimeout <= 0 {
		po.AckTimeout = 5 * time.Second
	}
	if po.Log == nil {
		po.Log = slog.New(slog.DiscardHandler)
	}
	if po.Compression == "" {
		po.Compression = CompressS2.String()
	}
	comp, err := ParseCompression(po.Compression)
	if err != nil {
		return nil, err
	}
	framer, err := NewFramer(comp)
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(po.MaxInFlight),
		jetstream.WithPublishAsyncTimeout(po.AckTimeout))
	if err != nil {
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	p := &Publisher{nc: nc, js: js, log: po.Log, hooks: po.Hooks, framer: framer, shipper: po.Shipper,
		slots: make(chan struct{}, po.MaxInFlight), borrowed: true}
	p.life, p.stopAll = context.WithCancel(context.Background())
	return p, nil
}

// Connected reports whether the connection is up now.
func (p *Publisher) Connected() bool { return p.nc.IsConnected() }

// Connect connects to NATS (retrying in the background if the server is not
// up yet), waits until connected or ctx is done, and makes sure the stream
// exists: it creates it on a single server, and on a NATS cluster waits for
// an analyzer to create it (partitioned), logging once that it waits.
func Connect(ctx context.Context, no NATSOptions, so StreamOptions, po PublisherOptions) (*Publisher, error) {
	if po.MaxInFlight <= 0 {
		po.MaxInFlight = 16
	}
	if po.AckTimeout <= 0 {
		po.AckTimeout = 5 * time.Second
	}
	if po.Log == nil {
		po.Log = slog.New(slog.DiscardHandler)
	}
	log := po.Log
	if po.Compression == "" {
		po.Compression = CompressS2.String()
	}
	comp, err := ParseCompression(po.Compression)
	if err != nil {
		return nil, err
	}
	framer, err := NewFramer(comp)
	if err != nil {
		return nil, err
	}
	auth, err := no.Options()
	if err != nil {
		return nil, err
	}
	p := &Publisher{log: log, hooks: po.Hooks, framer: framer, shipper: po.Shipper, slots: make(chan struct{}, po.MaxInFlight)}
	p.life, p.stopAll = context.WithCancel(context.Background())
	opts := append(auth,
		nats.Name(po.Name),
		nats.MaxReconnects(-1),
		nats.RetryOnFailedConnect(true),
		nats.ReconnectWait(250*time.Millisecond),
		nats.ReconnectJitter(250*time.Millisecond, time.Second),
		// Our own window bounds memory; nats.go's reconnect buffer only
		// needs to hold what is in flight when the link drops.
		nats.ReconnectBufSize(4<<20),
		nats.ConnectHandler(func(*nats.Conn) { log.Info("nats connected", "url", no.URL) }),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err == nil {
				return // our own Close
			}
			log.Warn("nats disconnected, reading paused once the window is full; retrying", "err", err)
			if p.hooks.Disconnected != nil {
				p.hooks.Disconnected(err)
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			if p.hooks.Reconnected != nil {
				p.hooks.Reconnected()
			}
			log.Info("nats reconnected", "url", nc.ConnectedUrlRedacted())
		}),
		// Failed attempts are not logged one by one (every second while
		// the server is down); notConnected reports the last one.
		nats.ReconnectErrHandler(func(_ *nats.Conn, err error) {
			p.mu.Lock()
			p.dialErr = err
			p.mu.Unlock()
		}),
		nats.ClosedHandler(func(*nats.Conn) { log.Debug("nats connection closed") }),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { log.Warn("nats error", "err", err) }),
	)
	nc, err := nats.Connect(no.URL, opts...)
	if err != nil {
		return nil, fmt.Errorf("nats %s: %w", no.URL, err)
	}
	p.nc = nc
	p.js, err = jetstream.New(nc,
		jetstream.WithPublishAsyncMaxPending(po.MaxInFlight),
		jetstream.WithPublishAsyncTimeout(po.AckTimeout))
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	if err := p.ensureStream(ctx, so); err != nil {
		nc.Close()
		return nil, err
	}
	return p, nil
}

// ensureStream creates FAULTLINE_LOGS if missing, retrying with backoff while
// the server is unreachable (a shipper may start before the analyzer).
func (p *Publisher) ensureStream(ctx context.Context, so StreamOptions) error {
	b := Backoff{Min: 100 * time.Millisecond, Max: 5 * time.Second}
	var last string
	for {
		if p.nc.IsClosed() {
			// nats.go gives up only on errors that retrying cannot fix
			// (authorization violation twice in a row).
			return fmt.Errorf("nats connection closed: %w", p.nc.LastError())
		}
		err := p.tryEnsureStream(ctx, so)
		if err == nil {
			if last != "" {
				p.log.Info("stream ready", "stream", StreamName)
			}
			return nil
		}
		if msg := err.Error(); msg != last {
			p.log.Warn("stream not ready, retrying", "stream", StreamName, "err", err)
			last = msg
		}
		if !b.Wait(ctx) {
			return fmt.Errorf("stream %s: %w (last error: %v)", StreamName, ctx.Err(), err)
		}
	}
}

func (p *Publisher) tryEnsureStream(ctx context.Context, so StreamOptions) error {
	if !p.nc.IsConnected() {
		return p.notConnected()
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if p.nc.ConnectedClusterName() != "" {
		return p.waitStream(cctx)
	}
	st, created, err := EnsureStream(cctx, p.nc, p.js, so)
	if err == nil {
		p.setDupWindow(st)
	}
	if err == nil && created {
		cfg := so.StreamConfig(p.nc.MaxPayload())
		p.log.Info("stream created", "stream", StreamName, "max_age", cfg.MaxAge, "max_bytes", cfg.MaxBytes, "duplicates", cfg.Duplicates, "max_msg_size", cfg.MaxMsgSize)
	}
	return err
}

// errNoStreamYet: on a NATS cluster the stream is partitioned, and only an
// analyzer knows how (EnsurePartitionedStream); a shipper creating a plain
// one first would take the subjects the analyzer needs.
var errNoStreamYet = errors.New("no stream yet: on a NATS cluster an analyzer creates it (analyzer serve); waiting for it")

// waitStream checks that the stream exists, without creating it.
func (p *Publisher) waitStream(ctx context.Context) error {
	st, err := p.js.Stream(ctx, StreamName)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return errNoStreamYet
	}
	if err == nil {
		p.setDupWindow(st)
	}
	return err
}

func (p *Publisher) setDupWindow(st jetstream.Stream) {
	if info := st.CachedInfo(); info != nil {
		p.mu.Lock()
		p.dupWindow = info.Config.Duplicates
		p.mu.Unlock()
	}
}

// DuplicateWindow is the stream's duplicate window (Nats-Msg-Id
// de-duplication): a batch sent again later than this after it was first
// stored is stored twice.
func (p *Publisher) DuplicateWindow() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dupWindow
}

// notConnected says why the connection is not up: a TLS or authentication
// failure after the TCP connection (nats.go keeps it as the connection's last
// error), else the last failed dial. "nats: connection closed" alone would
// leave the operator guessing at a bad certificate.
func (p *Publisher) notConnected() error {
	if err := p.nc.LastError(); err != nil {
		return fmt.Errorf("not connected: %w", err)
	}
	p.mu.Lock()
	err := p.dialErr
	p.mu.Unlock()
	if err != nil {
		return fmt.Errorf("not connected: %w", err)
	}
	return errors.New("not connected yet")
}

// MaxPayload is the server's limit on a message, read from the connection.
func (p *Publisher) MaxPayload() int { return int(p.nc.MaxPayload()) }

// Publish sends m, blocking while MaxInFlight batches await their PubAck or
// until ctx is done. onAck runs once the server stored (or had already
// stored) the batch. Once accepted, m is retried until acknowledged or until
// Wait gives up or Close, whatever happens to ctx; the caller must not
// change m.Body until onAck.
func (p *Publisher) Publish(ctx context.Context, m *Message, onAck func()) error {
	select {
	case p.slots <- struct{}{}:
	default:
		if p.hooks.WindowFull != nil {
			p.hooks.WindowFull()
		}
		select {
		case p.slots <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	var frame []byte
	if b, ok := p.frames.Get().(*[]byte); ok {
		frame = (*b)[:0]
	}
	frame = p.framer.Append(frame, m.Body)
	m.Sent = len(frame)
	msg := &nats.Msg{Subject: m.Subject, Data: frame, Header: nats.Header{}}
	msg.Header.Set(HeaderMsgID, m.MsgID)
	msg.Header.Set(HeaderCount, strconv.Itoa(m.Count))
	if !m.ReadAt.IsZero() {
		msg.Header.Set(HeaderReadAt, strconv.FormatInt(m.ReadAt.UnixNano(), 10))
	}
	if p.shipper != "" {
		msg.Header.Set(HeaderShipper, p.shipper)
	}
	p.wg.Add(1)
	go p.deliver(p.life, m, msg, func() {
		p.frames.Put(&frame)
		if onAck != nil {
			onAck()
		}
	})
	return nil
}

// deliver publishes msg until it is acknowledged or ctx is done.
func (p *Publisher) deliver(ctx context.Context, m *Message, msg *nats.Msg, onAck func()) {
	defer p.wg.Done()
	defer func() { <-p.slots }()
	bo := Backoff{Min: 100 * time.Millisecond, Max: 5 * time.Second}
	for {
		err := p.publishOnce(ctx, m, msg)
		if err == nil {
			p.setFailing(nil)
			if p.hooks.Stored != nil {
				p.hooks.Stored(m)
			}
			onAck()
			return
		}
		if p.hooks.Failed != nil {
			p.hooks.Failed(m, err)
		}
		p.setFailing(err)
		if !bo.Wait(ctx) {
			return
		}
	}
}

func (p *Publisher) publishOnce(ctx context.Context, m *Message, msg *nats.Msg) error {
	paf, err := p.js.PublishMsgAsync(msg)
	if err != nil {
		return err
	}
	select {
	case ack := <-paf.Ok():
		if ack.Duplicate {
			// Expected after a lost state dir or a retry whose first
			// attempt was stored: the stream has these records already.
			if p.hooks.Duplicate != nil {
				p.hooks.Duplicate(m)
			}
			p.log.Debug("batch dropped as a duplicate: the stream already holds it",
				"id", m.MsgID, "records", m.Count, "subject", m.Subject)
		}
		return nil
	case err := <-paf.Err():
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// setFailing logs publishing state once per change, not once per retry.
func (p *Publisher) setFailing(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case err == nil && p.failing != nil:
		p.log.Info("publishing again", "after", p.failing.Error())
	case err != nil && p.failing == nil:
		p.log.Warn("publish failed, retrying with backoff (reading stops when the window is full)", "err", err)
	case err != nil && p.failing.Error() != err.Error() && !errors.Is(err, context.Canceled):
		p.log.Warn("publish still failing", "err", err)
	}
	p.failing = err
}

// Wait waits until every batch handed to Publish is acknowledged; when ctx
// ends first it gives the rest up (the caller sends them again later).
func (p *Publisher) Wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() { p.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		p.stopAll()
		<-done
		return ctx.Err()
	}
}

// Close gives up the deliveries still running and closes the connection
// (not one given to NewPublisher).
func (p *Publisher) Close() {
	p.stopAll()
	if !p.borrowed {
		p.nc.Close()
	}
}

// Backoff is capped exponential backoff with jitter.
type Backoff struct {
	Min, Max, cur time.Duration
}

// Wait sleeps for the next delay; false if ctx ended first.
func (b *Backoff) Wait(ctx context.Context) bool {
	if b.cur == 0 {
		b.cur = b.Min
	} else if b.cur *= 2; b.cur > b.Max {
		b.cur = b.Max
	}
	d := b.cur/2 + rand.N(b.cur/2+1)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
