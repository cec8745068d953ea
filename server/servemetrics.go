package server

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
)

// collectors are serve's own metrics, beside the Go, process, rule-error,
// HTTP and index ones: how much it consumed and evaluated, how far behind
// the stream and the index it is, and how much input was bad. They read
// counters the hot path keeps anyway (atomics) or ask JetStream at scrape
// time, so consuming costs nothing more.
func (s *server) collectors() []prometheus.Collector {
	x := s.idx
	var store []prometheus.Collector
	if s.natsStore != nil {
		store = s.natsStore.collectors()
	}
	return append(store,
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "faultline_records_consumed_total",
			Help: "Records consumed from the stream by this process (redeliveries included)."},
			func() float64 { return float64(s.counters.Records.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "faultline_rule_evaluations_total",
			Help: "Events the rule engine evaluated (each record once, the warm-up replay included)."},
			func() float64 { return float64(s.counters.Evaluated.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "faultline_bad_messages_total",
			Help: "Messages with a line that is not a record (the records before it are used, the rest dropped)."},
			func() float64 { return float64(s.counters.BadMessages.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "faultline_nats_errors_total",
			Help: "Asynchronous NATS errors of serve's connection (slow-consumer drops, permission violations); each is logged."},
			func() float64 { return float64(s.natsErrors.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "faultline_index_lag_records",
			Help: "Records evaluated but not yet known flushed to the index (their messages are not acknowledged yet)."},
			func() float64 { return float64(s.commit.Unindexed()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "faultline_findings_unannounced",
			Help: "Findings with a version not yet taken by every sink (settling, or retried after a sink failed)."},
			func() float64 {
				if s.announcer == nil {
					return 0
				}
				return float64(s.announcer.Pending())
			}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "faultline_index_queue_depth",
			Help: "Events handed to the index and not yet in an executed batch."},
			func() float64 { st := x.Stats(); return float64(st.Added) - float64(st.Indexed) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "faultline_index_records",
			Help: "Records in the index that searches see (those pruned or replaced left out)."},
			func() float64 { n, _ := x.DocCount(); return float64(n) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "faultline_index_pruned_records_total",
			Help: "Records dropped from the index: the stream no longer holds them (its retention), or their partition moved to another analyzer that holds it in full."},
			func() float64 { return float64(s.pruned.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "faultline_index_writes_stalled",
			Help: "1 while index writes fail and are being retried (a full disk: /healthz says why), else 0."},
			func() float64 {
				if x.Stats().Stalled != "" {
					return 1
				}
				return 0
			}),
		newOutboxCollector(s.outboxes),
		newPartitionCollector(s),
		&consumerCollector{s: s,
			pending: prometheus.NewDesc("faultline_consumer_pending_messages",
				"Messages of the stream not yet delivered to the analyzer's durable consumer (JetStream num_pending).", nil, nil),
			unacked: prometheus.NewDesc("faultline_consumer_unacked_messages",
				"Messages delivered to the consumer and not yet acknowledged (JetStream num_ack_pending).", nil, nil)},
	)
}

// consumerCollector reads the durable consumer's lag from JetStream at
// scrape time; nothing is exposed before the consumer exists or while
// JetStream does not answer.
type consumerCollector struct {
	s                *server
	pending, unacked *prometheus.Desc
}

func (c *consumerCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.pending; ch <- c.unacked }

func (c *consumerCollector) Collect(ch chan<- prometheus.Metric) {
	cons, _ := c.s.cons.Load().(jetstream.Consumer)
	if cons == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	info, err := cons.Info(ctx)
	if err != nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(c.pending, prometheus.GaugeValue, float64(info.NumPending))
	ch <- prometheus.MustNewConstMetric(c.unacked, prometheus.GaugeValue, float64(info.NumAckPending))
}
