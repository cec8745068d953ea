package shipper

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/faultline/faultline/wire"
)

// NATSOptions say how to reach and authenticate to the server.
type NATSOptions struct {
	URL      string
	User     string
	Password string
	Token    string
	Creds    string // .creds file (JWT + nkey seed)
	NKey     string // nkey seed file
	TLSCA    string
	TLSCert  string
	TLSKey   string
}

// Options turns o into nats.go options (the analyzer uses them too, for an
// external NATS). Authentication errors (a missing creds file) are reported
// here, before any connection attempt.
func (o NATSOptions) Options() ([]nats.Option, error) {
	var opts []nats.Option
	if o.User != "" || o.Password != "" {
		opts = append(opts, nats.UserInfo(o.User, o.Password))
	}
	if o.Token != "" {
		opts = append(opts, nats.Token(o.Token))
	}
	if o.Creds != "" {
		// nats.go reads the file at each connection attempt and, the
		// server being unreachable or the file broken, retries forever.
		if err := checkCreds(o.Creds); err != nil {
			return nil, fmt.Errorf("creds %s: %w", o.Creds, err)
		}
		opts = append(opts, nats.UserCredentials(o.Creds))
	}
	if o.NKey != "" {
		opt, err := nats.NkeyOptionFromSeed(o.NKey)
		if err != nil {
			return nil, fmt.Errorf("nkey %s: %w", o.NKey, err)
		}
		opts = append(opts, opt)
	}
	if o.TLSCA != "" {
		opts = append(opts, nats.RootCAs(o.TLSCA))
	}
	if o.TLSCert != "" || o.TLSKey != "" {
		if o.TLSCert == "" || o.TLSKey == "" {
			return nil, errors.New("--tls-cert and --tls-key go together")
		}
		opts = append(opts, nats.ClientCert(o.TLSCert, o.TLSKey))
	}
	return opts, nil
}

// checkCreds makes sure file holds a user JWT and a user nkey seed.
func checkCreds(file string) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	tok, err := jwt.ParseDecoratedJWT(b)
	if err != nil {
		return err
	}
	if _, err := jwt.DecodeUserClaims(tok); err != nil {
		return fmt.Errorf("no user JWT: %w", err)
	}
	if _, err := jwt.ParseDecoratedUserNKey(b); err != nil {
		return fmt.Errorf("no user nkey seed: %w", err)
	}
	return nil
}

// StreamOptions are the limits of the FAULTLINE_LOGS stream when the shipper
// has to create it. An existing stream is left as it is: the analyzer's
// operator may have tuned it.
type StreamOptions struct {
	MaxAge     time.Duration
	MaxBytes   int64
	Duplicates time.Duration
}

// StreamConfig is the FAULTLINE_LOGS stream with these limits (zero fields
// take the defaults: 7 days, no byte limit, a 10-minute duplicate window).
// The shipper and the analyzer create the stream alike, whichever comes
// first.
func (so StreamOptions) StreamConfig(maxPayload int64) jetstream.StreamConfig {
	cfg := jetstream.StreamConfig{
		Name:        wire.StreamName,
		Description: "Faultline log records (NDJSON batches)",
		Subjects:    []string{wire.StreamSubjects},
		Storage:     jetstream.FileStorage,
		Retention:   jetstream.LimitsPolicy,
		Discard:     jetstream.DiscardOld,
		MaxAge:      so.MaxAge,
		MaxBytes:    so.MaxBytes,
		Duplicates:  so.Duplicates,
		MaxMsgSize:  int32(maxPayload),
	}
	if cfg.MaxAge == 0 {
		cfg.MaxAge = 7 * 24 * time.Hour
	}
	if cfg.MaxBytes == 0 {
		cfg.MaxBytes = -1
	}
	if cfg.Duplicates == 0 {
		cfg.Duplicates = 10 * time.Minute
	}
	return cfg
}

// batch is one message: consecutive records of one file.
type batch struct {
	subject string
	body    []byte
	count   int
	msgID   string
	records int64 // for metrics
	onAck   func()
}

// Publisher publishes batches asynchronously to JetStream with a bounded
// number in flight. Publish blocks while the window is full, which is how
// the readers stop reading when the server is slow or gone. A batch is
// retried unchanged (same body, same Nats-Msg-Id) until acknowledged, so a
// retry after a lost PubAck is dropped by the server's duplicate window.
type Publisher struct {
	nc      *nats.Conn
	js      jetstream.JetStream
	log     *slog.Logger
	metrics *Metrics
	slots   chan struct{}
	wg      sync.WaitGroup
	bodies  sync.Pool
	bodyCap int // capacity of a new body: a batch closes soon after the soft limit
	// Deliveries live until Wait gives up or Close, not as long as the
	// reader that handed them over: the last batch of stdin is published
	// after stdin's reader is done, and a stopping shipper still lets its
	// in-flight batches be acknowledged.
	life    context.Context
	stopAll context.CancelFunc

	mu      sync.Mutex
	failing error // current publish failure, logged once per change
	dialErr error // last failed connection attempt, for notConnected
}

// PublisherOptions tune the publisher.
type PublisherOptions struct {
	MaxInFlight int           // batches awaiting a PubAck (default 16)
	AckTimeout  time.Duration // a PubAck not received by then means retry (default 5s)
	Name        string        // connection name shown by the server
}

// Connect connects to NATS (retrying in the background if the server is not
// up yet), waits until connected or ctx is done, and makes sure the stream
// exists.
func Connect(ctx context.Context, no NATSOptions, so StreamOptions, po PublisherOptions, log *slog.Logger, m *Metrics) (*Publisher, error) {
	if po.MaxInFlight <= 0 {
		po.MaxInFlight = 16
	}
	if po.AckTimeout <= 0 {
		po.AckTimeout = 5 * time.Second
	}
	auth, err := no.Options()
	if err != nil {
		return nil, err
	}
	p := &Publisher{log: log, metrics: m, slots: make(chan struct{}, po.MaxInFlight)}
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
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			m.reconnects.Inc()
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
// the server is unreachable (the shipper may start before the analyzer).
func (p *Publisher) ensureStream(ctx context.Context, so StreamOptions) error {
	b := backoff{min: 100 * time.Millisecond, max: 5 * time.Second}
	var last string
	for {
		if p.nc.IsClosed() {
			// nats.go gives up only on errors that retrying cannot fix
			// (authorization violation twice in a row).
			return fmt.Errorf("nats connection closed: %v", p.nc.LastError())
		}
		err := p.tryEnsureStream(ctx, so)
		if err == nil {
			if last != "" {
				p.log.Info("stream ready", "stream", wire.StreamName)
			}
			return nil
		}
		if msg := err.Error(); msg != last {
			p.log.Warn("stream not ready, retrying", "stream", wire.StreamName, "err", err)
			last = msg
		}
		if !b.wait(ctx) {
			return fmt.Errorf("stream %s: %w (last error: %v)", wire.StreamName, ctx.Err(), err)
		}
	}
}

func (p *Publisher) tryEnsureStream(ctx context.Context, so StreamOptions) error {
	if !p.nc.IsConnected() {
		return p.notConnected()
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err := p.js.Stream(cctx, wire.StreamName)
	if err == nil {
		return nil
	}
	if !errors.Is(err, jetstream.ErrStreamNotFound) {
		return err
	}
	cfg := so.StreamConfig(p.nc.MaxPayload())
	_, err = p.js.CreateStream(cctx, cfg)
	if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		return nil // another shipper won the race
	}
	if err == nil {
		p.log.Info("stream created", "stream", wire.StreamName, "max_age", cfg.MaxAge, "max_bytes", cfg.MaxBytes, "duplicates", cfg.Duplicates, "max_msg_size", cfg.MaxMsgSize)
	}
	return err
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

// body returns a buffer for a batch body, recycled after the ack.
func (p *Publisher) body() []byte {
	if b, ok := p.bodies.Get().(*[]byte); ok {
		return (*b)[:0]
	}
	return make([]byte, 0, p.bodyCap)
}

// Publish sends b, blocking while MaxInFlight batches await their PubAck or
// until ctx is done. b.onAck runs once the server stored (or had already
// stored) the batch. Once accepted, b is retried until acknowledged or
// until Wait gives up or Close, whatever happens to ctx.
func (p *Publisher) Publish(ctx context.Context, b *batch) error {
	select {
	case p.slots <- struct{}{}:
	default:
		p.metrics.windowFull.Inc()
		select {
		case p.slots <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	msg := &nats.Msg{Subject: b.subject, Data: b.body, Header: nats.Header{}}
	msg.Header.Set(wire.HeaderMsgID, b.msgID)
	msg.Header.Set(wire.HeaderCount, strconv.Itoa(b.count))
	p.wg.Add(1)
	go p.deliver(p.life, b, msg)
	return nil
}

// deliver publishes msg until it is acknowledged or ctx is done.
func (p *Publisher) deliver(ctx context.Context, b *batch, msg *nats.Msg) {
	defer p.wg.Done()
	defer func() { <-p.slots }()
	bo := backoff{min: 100 * time.Millisecond, max: 5 * time.Second}
	for {
		err := p.publishOnce(ctx, msg)
		if err == nil {
			p.setFailing(nil)
			p.metrics.batches.Inc()
			p.metrics.records.Add(float64(b.count))
			p.metrics.bytes.Add(float64(len(b.body)))
			b.onAck()
			body := b.body
			b.body = nil
			p.bodies.Put(&body)
			return
		}
		p.metrics.publishErrors.Inc()
		p.setFailing(err)
		if !bo.wait(ctx) {
			return
		}
	}
}

func (p *Publisher) publishOnce(ctx context.Context, msg *nats.Msg) error {
	paf, err := p.js.PublishMsgAsync(msg)
	if err != nil {
		return err
	}
	select {
	case ack := <-paf.Ok():
		if ack.Duplicate {
			// Expected after a lost state dir or a retry whose first
			// attempt was stored: the stream has these records already.
			p.metrics.duplicates.Inc()
			p.log.Debug("batch dropped as a duplicate: the stream already holds it",
				"id", msg.Header.Get(wire.HeaderMsgID), "records", msg.Header.Get(wire.HeaderCount), "subject", msg.Subject)
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
// ends first it gives the rest up (their offsets stay unsaved, so they are
// sent again after a restart).
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

// Close gives up the deliveries still running and closes the connection.
func (p *Publisher) Close() {
	p.stopAll()
	p.nc.Close()
}

// backoff is capped exponential backoff with jitter.
type backoff struct {
	min, max, cur time.Duration
}

// wait sleeps for the next delay; false if ctx ended first.
func (b *backoff) wait(ctx context.Context) bool {
	if b.cur == 0 {
		b.cur = b.min
	} else if b.cur *= 2; b.cur > b.max {
		b.cur = b.max
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
