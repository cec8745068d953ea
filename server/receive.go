package server

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/faultline/faultline/receiver"
	"github.com/faultline/faultline/transport"
	"github.com/faultline/faultline/web"
)

// ReceiveConfig is serve's log receivers (package receiver): OTLP/HTTP logs
// and the Loki push API on serve's HTTP, behind its token, publishing into
// the log stream as a shipper does.
type ReceiveConfig struct {
	Off          bool   // no receivers (--receive=false)
	Cluster      string // cluster of records whose client names none (default "default")
	MaxBodyBytes int64  // bound of a request body (default receiver.DefaultMaxBodyBytes)
}

// startReceiver makes the receivers' publisher on serve's connection.
func (s *server) startReceiver() error {
	if s.cfg.Receive.Off || s.cfg.HTTP == "" {
		return nil
	}
	pub, err := transport.NewPublisher(s.nc, transport.PublisherOptions{Log: s.log})
	if err != nil {
		return err
	}
	s.receiver = receiver.New(pub, receiver.Options{Cluster: s.cfg.Receive.Cluster, MaxBodyBytes: s.cfg.Receive.MaxBodyBytes, Log: s.log})
	return nil
}

// receiverRoutes are the receivers' endpoints, behind the token as every
// route but /healthz.
func (s *server) receiverRoutes() []web.Route {
	if s.receiver == nil {
		return nil
	}
	return []web.Route{
		{Pattern: "POST " + receiver.OTLPPath, Handler: s.receiver.OTLP()},
		{Pattern: "POST " + receiver.LokiPath, Handler: s.receiver.Loki()},
	}
}

// receiverCollectors count the receivers' requests and records.
func (s *server) receiverCollectors() []prometheus.Collector {
	r := s.receiver
	if r == nil {
		return nil
	}
	requests := prometheus.NewDesc("faultline_receiver_requests_total",
		"Requests to the log receivers (OTLP, Loki push) by outcome: ok (2xx, every record acknowledged by JetStream), rejected (4xx), busy (429), unavailable (503).",
		[]string{"outcome"}, nil)
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "faultline_receiver_requests_in_flight",
			Help: "Requests the log receivers are handling: reading the body or waiting for JetStream's acknowledgements."},
			func() float64 { return float64(r.InFlight.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "faultline_receiver_records_total",
			Help: "Records the log receivers published and JetStream acknowledged."},
			func() float64 { return float64(r.Records.Load()) }),
		collectorFunc{desc: requests, collect: func(ch chan<- prometheus.Metric) {
			for outcome, n := range map[string]int64{"ok": r.Requests.OK.Load(), "rejected": r.Requests.Rejected.Load(),
				"busy": r.Requests.Busy.Load(), "unavailable": r.Requests.Unavailable.Load()} {
				ch <- prometheus.MustNewConstMetric(requests, prometheus.CounterValue, float64(n), outcome)
			}
		}},
	}
}

// collectorFunc is a collector of one description read at scrape time.
type collectorFunc struct {
	desc    *prometheus.Desc
	collect func(chan<- prometheus.Metric)
}

func (c collectorFunc) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }
func (c collectorFunc) Collect(ch chan<- prometheus.Metric) { c.collect(ch) }
