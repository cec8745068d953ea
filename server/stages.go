package server

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/faultline/faultline/transport"
)

// stageBuckets resolve a live alert's stages (goal: a line to its finding
// within 100 ms) from a millisecond to seconds.
var stageBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .075, .1, .15, .25, .5, 1, 2.5, 5}

// stageMetrics time a batch's way through serve, observed per batch (per
// announcement for announce), never per record:
//
//   - consume_wait: JetStream stored the message to serve reading it
//   - decode: the batch's body to records
//   - rules: parsing its records into events and the rule engine
//   - announce: one delivery of findings to the sinks (by the announcer,
//     after its settle window)
//   - index: adding the batch's events to the index, after its rules ran
//     (alerts never wait for it; acks wait for the index's flush)
//
// and, per finding announced live, faultline_line_to_finding_seconds: the
// shipper's read of the batch's first record (header Faultline-Read-At; the
// shipper's clock, so skew between hosts shows here) to every sink having
// taken the finding (the announcer's settle window included), and
// faultline_stored_to_finding_seconds from JetStream's time of storing that
// batch.
type stageMetrics struct {
	hist                                        *prometheus.HistogramVec
	consumeWait, decode, rules, announce, index prometheus.Observer
	lineToFinding, storedToFinding              prometheus.Histogram
}

func newStageMetrics() *stageMetrics {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "faultline_stage_seconds",
		Help:    "Time a batch spends in each stage of serve (consume_wait, decode, rules, announce, index).",
		Buckets: stageBuckets}, []string{"stage"})
	return &stageMetrics{hist: h,
		consumeWait: h.WithLabelValues("consume_wait"), decode: h.WithLabelValues("decode"),
		rules: h.WithLabelValues("rules"), announce: h.WithLabelValues("announce"), index: h.WithLabelValues("index"),
		lineToFinding: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "faultline_line_to_finding_seconds",
			Help:    "A shipper's read of a batch's first record to a finding it raised being handed to the sinks (clocks of two hosts: skew adds to it).",
			Buckets: stageBuckets}),
		storedToFinding: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "faultline_stored_to_finding_seconds",
			Help:    "JetStream storing a batch to a finding it raised being handed to the sinks.",
			Buckets: stageBuckets}),
	}
}

func (m *stageMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.hist, m.lineToFinding, m.storedToFinding}
}

// Consumed observes a batch's consume_wait and decode; now is when serve
// got it (lane.Metrics).
func (m *stageMetrics) Consumed(b *transport.Batch, now time.Time) {
	if !b.Stored.IsZero() {
		m.consumeWait.Observe(max(now.Sub(b.Stored)-b.Decode, 0).Seconds())
	}
	m.decode.Observe(b.Decode.Seconds())
}

// Rules observes a batch's parsing and rules (lane.Metrics).
func (m *stageMetrics) Rules(d time.Duration) { m.rules.Observe(d.Seconds()) }

// Indexed observes a batch's indexing (lane.Metrics).
func (m *stageMetrics) Indexed(d time.Duration) { m.index.Observe(d.Seconds()) }

// Delivered observes one delivery of findings to the sinks
// (lane.AnnounceMetrics).
func (m *stageMetrics) Delivered(_ int, d time.Duration) { m.announce.Observe(d.Seconds()) }

// Found observes the latency of a finding raised by a live batch (its
// shipper read its first record at readAt, JetStream stored it at stored)
// that every sink took at now (lane.AnnounceMetrics).
func (m *stageMetrics) Found(readAt, stored, now time.Time) {
	if !readAt.IsZero() {
		m.lineToFinding.Observe(max(now.Sub(readAt), 0).Seconds())
	}
	if !stored.IsZero() {
		m.storedToFinding.Observe(max(now.Sub(stored), 0).Seconds())
	}
}
