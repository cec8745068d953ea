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
	parked        prometheus.Gauge
	fdWaits       prometheus.Counter
	resentBatches prometheus.Counter
	resentRecords prometheus.Counter
	rejoined      prometheus.Counter
	stateErrors   *prometheus.CounterVec
	dupWindow     prometheus.Gauge
	inFlight      prometheus.Gauge
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
		duplicates:    f("duplicate_acks_total", "Batches the server already had (dropped by Nats-Msg-Id): retries after a lost acknowledgement, batches sent again after a restart."),
		resentBatches: f("resent_batches_total", "Batches of an earlier run sent again after a restart under their own Nats-Msg-Id (from the sent log): those the server had are counted in duplicate_acks_total too."),
		resentRecords: f("resent_records_total", "Records in resent_batches_total."),
		rejoined: f("resent_changed_records_total", "Records read again after a restart that the sent log does not hold as they are now "+
			"(the joiner now sees lines that came after the crash, or the log lost them): sent under new batch IDs, so the stream may hold them twice."),
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
		files:   prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "faultline_shipper", Name: "files_open", Help: "Files being tailed and open (at most --max-open-files)."}),
		parked:  prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "faultline_shipper", Name: "files_parked", Help: "Files followed but closed until they are written (idle, or others waited for a descriptor)."}),
		fdWaits: f("descriptor_waits_total", "Opens that found the process out of file descriptors and waited (the file is opened later, never given up)."),
		stateErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "faultline_shipper", Name: "state_write_errors_total",
			Help: "Failed writes to the state dir, by file: offsets (retried; shipping goes on) or sent-log."}, []string{"file"}),
		dupWindow: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "faultline_shipper", Name: "duplicate_window_seconds",
			Help: "The stream's duplicate window: batches sent again later than this after their first sending may be stored twice."}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "faultline_shipper", Name: "in_flight_batches",
			Help: "Batches published and not acknowledged yet (at most --max-in-flight)."}),
	}
	r.MustRegister(m.warnings, m.rotations, m.skipped, m.lag, m.files, m.parked, m.stateErrors, m.dupWindow, m.inFlight)
	m.stages = newStageMetrics(r)
	return m
}
