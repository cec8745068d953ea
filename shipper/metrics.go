package shipper

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the shipper's Prometheus metrics, registered on a registry of
// its own (no global state; tests run several shippers in one process).
type Metrics struct {
	Registry *prometheus.Registry

	lines         prometheus.Counter
	bytesRead     prometheus.Counter
	recordsMade   prometheus.Counter
	batches       prometheus.Counter
	records       prometheus.Counter
	bytes         prometheus.Counter
	duplicates    prometheus.Counter
	publishErrors prometheus.Counter
	reconnects    prometheus.Counter
	windowFull    prometheus.Counter
	warnings      *prometheus.CounterVec
	truncated     prometheus.Counter
	rotations     *prometheus.CounterVec
	skipped       *prometheus.CounterVec
	lag           *prometheus.GaugeVec
	files         prometheus.Gauge
	stages        stageMetrics
}

// NewMetrics makes the metrics and registers them on a new registry.
func NewMetrics() *Metrics {
	r := prometheus.NewRegistry()
	f := func(name, help string) prometheus.Counter {
		c := prometheus.NewCounter(prometheus.CounterOpts{Namespace: "faultline_shipper", Name: name, Help: help})
		r.MustRegister(c)
		return c
	}
	m := &Metrics{
		Registry:      r,
		lines:         f("lines_read_total", "Physical lines read from files."),
		bytesRead:     f("read_bytes_total", "Bytes read from files."),
		recordsMade:   f("records_read_total", "Records framed and joined, before publishing."),
		batches:       f("acks_total", "Batches acknowledged by JetStream."),
		records:       f("records_published_total", "Records in acknowledged batches."),
		bytes:         f("published_bytes_total", "Bytes of acknowledged batches as sent (framed and compressed)."),
		duplicates:    f("duplicate_acks_total", "Batches the server already had (dropped by Nats-Msg-Id)."),
		publishErrors: f("publish_errors_total", "Failed publish attempts (each is retried)."),
		reconnects:    f("reconnects_total", "NATS reconnections."),
		windowFull:    f("window_full_total", "Times a reader waited because the in-flight window was full."),
		truncated:     f("records_truncated_total", "Records cut to fit one message."),
		warnings: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "faultline_shipper", Name: "input_warnings_total",
			Help: "Bad input reported (broken json-file records, overlong lines, ...)."}, []string{"file"}),
		rotations: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "faultline_shipper", Name: "rotations_total",
			Help: "File rotations seen, by kind (rename, truncate, rewrite, rotated: a rotated file read on start or after a rotation)."}, []string{"kind"}),
		skipped: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "faultline_shipper", Name: "skipped_total",
			Help: "Input not shipped (or not yet), by reason: unreadable, symlink-loop, not-regular, compressed, bad-gzip, torn-line, held-back (a line without its newline), no-first-line."}, []string{"reason"}),
		lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "faultline_shipper", Name: "lag_bytes",
			Help: "Bytes of a file not yet acknowledged (file size minus acknowledged offset)."}, []string{"file"}),
		files: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "faultline_shipper", Name: "files_open", Help: "Files being tailed."}),
	}
	r.MustRegister(m.warnings, m.rotations, m.skipped, m.lag, m.files)
	m.stages = newStageMetrics(r)
	return m
}
