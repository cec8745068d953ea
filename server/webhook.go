package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/sink"
	"github.com/faultline/faultline/transport"
)

// The webhook's outbox is a JetStream work-queue stream: a finding version
// is published there (Nats-Msg-Id: finding ID and version, so announcing it
// twice stores it once) before it is stored as announced, and its message is
// acknowledged only once the endpoint answered 2xx. Retries wait with
// backoff as redeliveries, so they survive a crash or restart of serve.
const (
	outboxStream   = "FAULTLINE_OUTBOX"
	outboxSubject  = "faultline.outbox.webhook"
	outboxConsumer = "webhook"
	// outboxWindow is how long versions of findings are gathered before
	// posting: a finding updated several times in it is posted once, at
	// its latest version.
	outboxWindow = time.Second
	// maxBackoff caps the wait between two attempts.
	maxBackoff = time.Minute
)

// webhook posts findings to a Slack-compatible endpoint through the outbox:
// serve's webhook sink (Announce queues, run delivers). Its body and post
// are sink.Poster's, as the direct webhook of diagnose and ingest.
type webhook struct {
	url     string
	backoff time.Duration
	log     *slog.Logger
	poster  sink.Poster
	js      jetstream.JetStream
	cons    jetstream.Consumer

	posts, failures atomic.Uint64 // for /metrics

	mu      sync.Mutex
	posted  map[string]uint64 // finding ID -> outbox sequence of the version last posted
	failing string            // last delivery error, logged once per change
}

// payload is what is POSTed (the tests decode it).
type payload = sink.Payload

func newWebhook(url string, backoff time.Duration, log *slog.Logger) *webhook {
	return &webhook{url: url, backoff: backoff, log: log,
		poster: sink.Poster{URL: url}, posted: map[string]uint64{}}
}

// Announce queues the findings in the outbox; it returns once the server
// stored them (or failed to: that is logged, and the error returned).
func (w *webhook) Announce(_ context.Context, fs []finding.Finding) error {
	var errs []error
	for _, f := range fs {
		if err := w.enqueue(f); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Close: the outbox is JetStream's; nothing to release here.
func (w *webhook) Close() error { return nil }

// open makes sure the outbox stream and its consumer exist.
func (w *webhook) open(ctx context.Context, js jetstream.JetStream) error {
	if w.url == "" {
		return nil
	}
	// Bounded tries: analyzers of a cluster start together, and JetStream
	// can leave concurrent creates of one stream or consumer unanswered.
	cons, err := transport.UntilAnswered(ctx, func() (jetstream.Consumer, error) {
		tctx, cancel := context.WithTimeout(ctx, transport.RequestTimeout)
		defer cancel()
		return w.create(tctx, js)
	})
	if err != nil {
		return err
	}
	w.mu.Lock() // /metrics reads cons meanwhile
	w.js, w.cons = js, cons
	w.mu.Unlock()
	return nil
}

// enqueue puts a finding version in the outbox; it returns once the server
// stored it.
func (w *webhook) enqueue(f finding.Finding) error {
	if w.url == "" || w.js == nil {
		return nil
	}
	b, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("webhook outbox: encode %s: %w", f.ID, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	id := fmt.Sprintf("%s/%d/%s/%s", f.ID, f.Updates, f.Status, f.ExplainedBy)
	if _, err := w.js.Publish(ctx, outboxSubject, b, jetstream.WithMsgID(id)); err != nil {
		w.log.Error("webhook outbox: finding not queued for delivery", "id", f.ID, "err", err)
		return fmt.Errorf("webhook outbox: queue %s: %w", f.ID, err)
	}
	return nil
}

// run delivers the outbox until ctx ends.
func (w *webhook) run(ctx context.Context) {
	if w.cons == nil {
		return
	}
	for ctx.Err() == nil {
		batch, err := w.cons.Fetch(100, jetstream.FetchMaxWait(outboxWindow))
		if err != nil {
			w.setFailing(fmt.Errorf("outbox fetch: %w", err))
			sleepCtx(ctx, outboxWindow)
			continue
		}
		var msgs []jetstream.Msg
		for m := range batch.Messages() {
			msgs = append(msgs, m)
		}
		w.deliver(ctx, msgs)
	}
}

// deliver posts the latest version of each finding in msgs and acknowledges
// every message of it; on failure they come back after a backoff.
func (w *webhook) deliver(ctx context.Context, msgs []jetstream.Msg) {
	type version struct {
		f    finding.Finding
		seq  uint64
		msgs []jetstream.Msg
		n    uint64 // deliveries of the latest message
	}
	byID := map[string]*version{}
	var order []string
	for _, m := range msgs {
		var f finding.Finding
		md, err := m.Metadata()
		if err != nil || json.Unmarshal(m.Data(), &f) != nil {
			w.log.Error("webhook outbox: bad message dropped", "err", err)
			m.Term()
			continue
		}
		v := byID[f.ID]
		if v == nil {
			v = &version{}
			byID[f.ID] = v
			order = append(order, f.ID)
		}
		v.msgs = append(v.msgs, m)
		if md.Sequence.Stream > v.seq {
			v.f, v.seq, v.n = f, md.Sequence.Stream, md.NumDelivered
		}
	}
	for i, id := range order {
		v := byID[id]
		w.mu.Lock()
		stale := v.seq <= w.posted[id]
		w.mu.Unlock()
		if !stale {
			// Every message still waiting in this batch gets a fresh
			// AckWait: the posts before it may have taken their timeout.
			for _, later := range order[i:] {
				for _, m := range byID[later].msgs {
					m.InProgress()
				}
			}
			if err := w.poster.Post(ctx, v.f); err != nil {
				w.failures.Add(1)
				w.setFailing(err)
				delay := w.backoff << min(v.n-1, 16)
				if delay > maxBackoff || delay <= 0 {
					delay = maxBackoff
				}
				w.log.Debug("webhook failed, retrying", "id", id, "attempt", v.n, "in", delay, "err", err)
				for _, m := range v.msgs {
					m.NakWithDelay(delay)
				}
				continue
			}
			w.posts.Add(1)
			w.setFailing(nil)
			w.mu.Lock()
			w.posted[id] = v.seq
			w.mu.Unlock()
			w.log.Info("webhook posted", "id", id, "attempt", v.n, "versions", len(v.msgs))
		}
		for _, m := range v.msgs {
			if err := m.DoubleAck(ctx); err != nil {
				w.log.Warn("webhook outbox ack", "id", id, "err", err)
			}
		}
	}
}

// setFailing logs delivery failures once per change of error.
func (w *webhook) setFailing(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case err == nil && w.failing != "":
		w.log.Info("webhook delivering again", "after", w.failing)
		w.failing = ""
	case err != nil && err.Error() != w.failing:
		w.log.Warn("webhook failed; findings stay in the outbox and are retried with backoff, across restarts", "err", err)
		w.failing = err.Error()
	}
}

// create makes the outbox stream and its consumer (or finds them).
func (w *webhook) create(ctx context.Context, js jetstream.JetStream) (jetstream.Consumer, error) {
	st, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:        outboxStream,
		Description: "Faultline findings waiting for delivery to the webhook",
		Subjects:    []string{outboxSubject},
		Storage:     jetstream.FileStorage,
		Retention:   jetstream.WorkQueuePolicy,
		MaxAge:      7 * 24 * time.Hour,
		Duplicates:  time.Hour,
	})
	if err != nil {
		return nil, fmt.Errorf("outbox stream %s: %w", outboxStream, err)
	}
	cons, err := st.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable:     outboxConsumer,
		Description: "Faultline webhook delivery",
		AckPolicy:   jetstream.AckExplicitPolicy,
		// A message is marked in progress before each post, so AckWait
		// only has to outlast one post (10 s timeout); short, because it
		// is also how long a message delivered to a serve that was then
		// killed waits before the restarted one gets it.
		AckWait:       15 * time.Second,
		MaxDeliver:    -1, // until delivered (MaxAge bounds it)
		FilterSubject: outboxSubject,
	})
	if err != nil {
		return nil, fmt.Errorf("outbox consumer: %w", err)
	}
	return cons, nil
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// outboxCollector reads how many finding versions wait in the outbox at
// scrape time (nothing while there is no webhook or JetStream does not
// answer).
type outboxCollector struct {
	w       *webhook
	waiting *prometheus.Desc
}

func newOutboxCollector(w *webhook) *outboxCollector {
	return &outboxCollector{w: w, waiting: prometheus.NewDesc("faultline_webhook_outbox_waiting",
		"Finding versions in the webhook outbox not yet taken by the endpoint.", nil, nil)}
}

func (c *outboxCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.waiting }

func (c *outboxCollector) Collect(ch chan<- prometheus.Metric) {
	c.w.mu.Lock()
	cons := c.w.cons
	c.w.mu.Unlock()
	if cons == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	info, err := cons.Info(ctx)
	if err != nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(c.waiting, prometheus.GaugeValue, float64(info.NumPending+uint64(info.NumAckPending)))
}
