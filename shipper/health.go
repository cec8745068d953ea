package shipper

import (
	"encoding/json"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// Health is what the shipper's /healthz says: ok, or what keeps it from
// shipping or from saving what it shipped (a full state dir, NATS gone,
// publishes failing), each as it is now. The conditions come and go by
// themselves; none stops the shipper.
type Health struct {
	mu       sync.Mutex
	problems map[string]string // by what: offsets, sent-log, nats, publish
	gauge    *prometheus.GaugeVec
	any      atomic.Bool // len(problems) > 0: clear costs a load when all is well (it runs per batch)
}

// NewHealth makes a Health whose conditions are also the gauge
// faultline_shipper_problem{what} of m.
func NewHealth(m *Metrics) *Health {
	h := &Health{problems: map[string]string{}}
	h.gauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "faultline_shipper", Name: "problem",
		Help: "1 while a condition keeps the shipper from shipping or from saving what it shipped, by what: offsets (the state dir cannot take them), sent-log, nats (disconnected), publish (publishes fail); /healthz says why."},
		[]string{"what"})
	for _, w := range []string{"offsets", "sent-log", "nats", "publish"} {
		h.gauge.WithLabelValues(w).Set(0)
	}
	if m != nil {
		m.Registry.MustRegister(h.gauge)
	}
	return h
}

func (h *Health) set(what, why string) {
	if h == nil {
		return
	}
	h.mu.Lock()
	h.problems[what] = why
	h.any.Store(true)
	h.mu.Unlock()
	h.gauge.WithLabelValues(what).Set(1)
}

func (h *Health) clear(what string) {
	if h == nil || !h.any.Load() {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.problems[what]; !ok {
		return
	}
	delete(h.problems, what)
	h.any.Store(len(h.problems) > 0)
	h.gauge.WithLabelValues(what).Set(0)
}

// Problems lists what is wrong now, as "what: why", sorted.
func (h *Health) Problems() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]string, 0, len(h.problems))
	for w, why := range h.problems {
		out = append(out, w+": "+why)
	}
	sort.Strings(out)
	return out
}

// ServeHTTP answers /healthz: 200 {"status":"ok"}, or 503 with
// {"status":"not ok","problems":[...]}.
func (h *Health) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	p := h.Problems()
	if len(p) == 0 {
		json.NewEncoder(w).Encode(map[string]any{"status": "ok"})
		return
	}
	w.WriteHeader(http.StatusServiceUnavailable)
	json.NewEncoder(w).Encode(map[string]any{"status": "not ok", "problems": p})
}
