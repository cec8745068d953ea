package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/sink"
	"github.com/faultline/faultline/transport"
)

// Each delivery target (a --webhook, an --alertmanager) has its outbox:
// its subject of one JetStream work-queue stream and a durable consumer on
// it. A finding version is published there (Nats-Msg-Id: finding ID and
// version, so announcing it twice stores it once) before it is stored as
// announced, and its message is acknowledged only once the target took it.
// Retries wait with backoff as redeliveries, so they survive a crash or
// restart of serve. A target is named by its URL (a hash of it): the same
// URL after a restart resumes its outbox.
const (
	outboxStream   = "FAULTLINE_OUTBOX"
	outboxSubjects = "faultline.outbox.>"
	// outboxWindow is how long versions of findings are gathered before
	// posting: a finding updated several times in it is posted once, at
	// its latest version.
	outboxWindow = time.Second
	// maxBackoff caps the wait between two attempts.
	maxBackoff = time.Minute
)

// outbox delivers findings to one target: serve's sink for it (Announce
// queues, run delivers).
type outbox struct {
	kind    string // webhook, alertmanager
	target  string // the URL's host and a hash of the URL: logs and metrics (a hook's path is its secret)
	subject string
	durable string
	backoff time.Duration
	log     *slog.Logger
	// post delivers the latest versions of up to batch findings at once;
	// refresh, when set, runs between fetches (Alertmanager's re-sending
	// of active alerts).
	post    func(context.Context, []finding.Finding) error
	batch   int
	refresh func(context.Context) error
	js      jetstream.JetStream
	cons    jetstream.Consumer

	posts, failures atomic.Uint64 // for /metrics

	mu      sync.Mutex
	posted  map[string]uint64 // finding ID -> outbox sequence of the version last posted
	failing string            // last delivery error, logged once per change
}

// newOutbox is the outbox of the target at rawURL.
func newOutbox(kind, rawURL string, batch int, post func(context.Context, []finding.Finding) error, backoff time.Duration, log *slog.Logger) *outbox {
	sum := sha256.Sum256([]byte(rawURL))
	h := hex.EncodeToString(sum[:6])
	host := rawURL
	if u, err := url.Parse(rawURL); err == nil {
		host = u.Host
	}
	o := &outbox{kind: kind, target: host + "#" + h, subject: "faultline.outbox." + kind + "." + h, durable: kind + "-" + h,
		post: post, batch: max(batch, 1), backoff: backoff, posted: map[string]uint64{}}
	o.log = log.With(kind, o.target)
	return o
}

// newWebhook is the outbox of a Slack-compatible webhook: one POST per
// finding, sink.Poster's body, as the direct webhook of diagnose and
// ingest.
func newWebhook(rawURL string, backoff time.Duration, log *slog.Logger) *outbox {
	p := sink.Poster{URL: rawURL}
	return newOutbox("webhook", rawURL, 1, func(ctx context.Context, fs []finding.Finding) error { return p.Post(ctx, fs[0]) }, backoff, log)
}

// newAlertmanager is the outbox of an Alertmanager (sink.Alertmanager: the
// versions of a fetch in one POST, active alerts re-sent from the stored
// findings).
func newAlertmanager(rawURL string, opts sink.AlertmanagerOptions, stored func() []finding.Finding, backoff time.Duration, log *slog.Logger) (*outbox, error) {
	am, err := sink.NewAlertmanager(rawURL, opts)
	if err != nil {
		return nil, err
	}
	o := newOutbox("alertmanager", rawURL, 64, am.Post, backoff, log)
	o.refresh = func(ctx context.Context) error { return am.Refresh(ctx, stored) }
	return o, nil
}

// payload is what a webhook gets (the tests decode it).
type payload = sink.Payload

// Announce queues the findings in the outbox; it returns once the server
// stored them (or failed to: that is logged, and the error returned).
func (w *outbox) Announce(_ context.Context, fs []finding.Finding) error {
	var errs []error
	for _, f := range fs {
		if err := w.enqueue(f); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Close: the outbox is JetStream's; nothing to release here.
func (w *outbox) Close() error { return nil }

// open makes sure the outbox stream and this target's consumer exist.
func (w *outbox) open(ctx context.Context, js jetstream.JetStream) error {
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
func (w *outbox) enqueue(f finding.Finding) error {
	if w.js == nil {
		return nil
	}
	b, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("%s outbox: encode %s: %w", w.kind, f.ID, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// The stream's duplicate window spans every target's subject: the
	// target is part of the ID.
	id := fmt.Sprintf("%s/%s/%d/%s/%s", w.durable, f.ID, f.Updates, f.Status, f.ExplainedBy)
	if _, err := w.js.Publish(ctx, w.subject, b, jetstream.WithMsgID(id)); err != nil {
		w.log.Error("outbox: finding not queued for delivery", "id", f.ID, "err", err)
		return fmt.Errorf("%s outbox %s: queue %s: %w", w.kind, w.target, f.ID, err)
	}
	return nil
}

// run delivers the outbox until ctx ends.
func (w *outbox) run(ctx context.Context) {
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
		// In this goroutine, after the versions fetched: a re-sent alert
		// never overtakes its finding's resolution.
		if w.refresh != nil {
			if err := w.refresh(ctx); err != nil && ctx.Err() == nil {
				w.failures.Add(1)
				w.setFailing(err)
			}
		}
	}
}

// deliver posts the latest version of each finding in msgs, up to batch
// findings a post, and acknowledges every message of those it posted; on
// failure they come back after a backoff.
func (w *outbox) deliver(ctx context.Context, msgs []jetstream.Msg) {
	type version struct {
		f    finding.Finding
		seq  uint64
		msgs []jetstream.Msg
		n    uint64 // deliveries of the latest message
	}
	byID := map[string]*version{}
	var order []*version
	for _, m := range msgs {
		var f finding.Finding
		md, err := m.Metadata()
		if err != nil || json.Unmarshal(m.Data(), &f) != nil {
			w.log.Error("outbox: bad message dropped", "err", err)
			m.Term()
			continue
		}
		v := byID[f.ID]
		if v == nil {
			v = &version{}
			byID[f.ID] = v
			order = append(order, v)
		}
		v.msgs = append(v.msgs, m)
		if md.Sequence.Stream > v.seq {
			v.f, v.seq, v.n = f, md.Sequence.Stream, md.NumDelivered
		}
	}
	ack := func(vs []*version) {
		for _, v := range vs {
			for _, m := range v.msgs {
				if err := m.DoubleAck(ctx); err != nil {
					w.log.Warn("outbox ack", "id", v.f.ID, "err", err)
				}
			}
		}
	}
	var fresh []*version
	for _, v := range order {
		w.mu.Lock()
		stale := v.seq <= w.posted[v.f.ID]
		w.mu.Unlock()
		if stale {
			ack([]*version{v})
		} else {
			fresh = append(fresh, v)
		}
	}
	for len(fresh) > 0 {
		chunk := fresh[:min(w.batch, len(fresh))]
		fresh = fresh[len(chunk):]
		// Every message still waiting in this batch gets a fresh AckWait:
		// the posts before it may have taken their timeout.
		var fs []finding.Finding
		attempt := uint64(1)
		for _, v := range chunk {
			fs = append(fs, v.f)
			attempt = max(attempt, v.n)
		}
		for _, v := range append(chunk, fresh...) {
			for _, m := range v.msgs {
				m.InProgress()
			}
		}
		if err := w.post(ctx, fs); err != nil {
			w.failures.Add(1)
			w.setFailing(err)
			delay := w.backoff << min(attempt-1, 16)
			if delay > maxBackoff || delay <= 0 {
				delay = maxBackoff
			}
			w.log.Debug("delivery failed, retrying", "findings", len(fs), "attempt", attempt, "in", delay, "err", err)
			for _, v := range chunk {
				for _, m := range v.msgs {
					m.NakWithDelay(delay)
				}
			}
			continue
		}
		w.posts.Add(1)
		w.setFailing(nil)
		w.mu.Lock()
		for _, v := range chunk {
			w.posted[v.f.ID] = v.seq
		}
		w.mu.Unlock()
		for _, v := range chunk {
			w.log.Info("posted", "id", v.f.ID, "status", v.f.Status, "attempt", v.n, "versions", len(v.msgs))
		}
		ack(chunk)
	}
}

// setFailing logs delivery failures once per change of error.
func (w *outbox) setFailing(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case err == nil && w.failing != "":
		w.log.Info("delivering again", "after", w.failing)
		w.failing = ""
	case err != nil && err.Error() != w.failing:
		w.log.Warn("delivery failed; findings stay in the outbox and are retried with backoff, across restarts", "err", err)
		w.failing = err.Error()
	}
}

// create makes the outbox stream and this target's consumer (or finds
// them).
func (w *outbox) create(ctx context.Context, js jetstream.JetStream) (jetstream.Consumer, error) {
	st, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:        outboxStream,
		Description: "Faultline findings waiting for delivery to webhooks and Alertmanagers",
		Subjects:    []string{outboxSubjects},
		Storage:     jetstream.FileStorage,
		Retention:   jetstream.WorkQueuePolicy,
		MaxAge:      7 * 24 * time.Hour,
		Duplicates:  time.Hour,
	})
	if err != nil {
		return nil, fmt.Errorf("outbox stream %s: %w", outboxStream, err)
	}
	cons, err := st.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable:     w.durable,
		Description: "Faultline delivery to the " + w.kind + " " + w.target,
		AckPolicy:   jetstream.AckExplicitPolicy,
		// A message is marked in progress before each post, so AckWait
		// only has to outlast one post (10 s timeout); short, because it
		// is also how long a message delivered to a serve that was then
		// killed waits before the restarted one gets it.
		AckWait:       15 * time.Second,
		MaxDeliver:    -1, // until delivered (MaxAge bounds it)
		FilterSubject: w.subject,
	})
	if err != nil {
		return nil, fmt.Errorf("outbox consumer %s: %w", w.durable, err)
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

// outboxCollector gives each outbox's posts, failures and, read at
// scrape time, the finding versions waiting in it (none while JetStream
// does not answer), labelled by kind and target.
type outboxCollector struct {
	boxes                    []*outbox
	posts, failures, waiting *prometheus.Desc
}

func newOutboxCollector(boxes []*outbox) *outboxCollector {
	l := []string{"kind", "target"}
	return &outboxCollector{boxes: boxes,
		posts:    prometheus.NewDesc("faultline_outbox_posts_total", "Posts a webhook or Alertmanager took (2xx).", l, nil),
		failures: prometheus.NewDesc("faultline_outbox_failures_total", "Posts that failed (each is retried from the outbox).", l, nil),
		waiting:  prometheus.NewDesc("faultline_outbox_waiting", "Finding versions in the outbox not yet taken by the target.", l, nil)}
}

func (c *outboxCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.posts
	ch <- c.failures
	ch <- c.waiting
}

func (c *outboxCollector) Collect(ch chan<- prometheus.Metric) {
	for _, w := range c.boxes {
		ch <- prometheus.MustNewConstMetric(c.posts, prometheus.CounterValue, float64(w.posts.Load()), w.kind, w.target)
		ch <- prometheus.MustNewConstMetric(c.failures, prometheus.CounterValue, float64(w.failures.Load()), w.kind, w.target)
		w.mu.Lock()
		cons := w.cons
		w.mu.Unlock()
		if cons == nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		info, err := cons.Info(ctx)
		cancel()
		if err != nil {
			continue
		}
		ch <- prometheus.MustNewConstMetric(c.waiting, prometheus.GaugeValue, float64(info.NumPending+uint64(info.NumAckPending)), w.kind, w.target)
	}
}
