package server

import (
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/faultline/faultline/internal/testutil"
	"github.com/faultline/faultline/transport"
)

// scrape reads /metrics into name{labels} -> value.
func scrape(t *testing.T, httpAddr string) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + httpAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	out := map[string]float64{}
	for _, m := range regexp.MustCompile(`(?m)^(faultline_[a-z_]+(?:\{[^}]*\})?) (\S+)$`).FindAllStringSubmatch(string(b), -1) {
		v, _ := strconv.ParseFloat(m[2], 64)
		out[m[1]] = v
	}
	return out
}

// TestServeMetrics: /metrics of serve counts the records it consumed and
// evaluated, the bad messages, and shows how far behind the consumer and
// the index are (0 once all is done).
func TestServeMetrics(t *testing.T) {
	srv := startServer(t, Config{Demo: seedDir, DemoPace: 200 * time.Millisecond})
	nc, err := nats.Connect(srv.addrs.NATS)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	testutil.CheckFor(t, 60*time.Second, 100*time.Millisecond, func() error {
		if !strings.Contains(srv.stdout.String(), "replay done") {
			return fmt.Errorf("demo replay not done yet")
		}
		return nil
	})
	// A message that is not records: counted, and the consumer goes on.
	if _, err := nc.Request(transport.LogsSubject("default", "broken"), []byte("this is not a record\n"), 5*time.Second); err != nil {
		t.Fatalf("publish a bad message: %v", err)
	}
	testutil.CheckFor(t, 30*time.Second, 100*time.Millisecond, func() error {
		m := scrape(t, srv.addrs.HTTP)
		for _, want := range []struct {
			name string
			ok   func(float64) bool
		}{
			{"faultline_records_consumed_total", func(v float64) bool { return v > 100 }},
			{"faultline_rule_evaluations_total", func(v float64) bool { return v > 100 }},
			{"faultline_bad_messages_total", func(v float64) bool { return v == 1 }},
			{"faultline_consumer_pending_messages", func(v float64) bool { return v == 0 }},
			{"faultline_consumer_unacked_messages", func(v float64) bool { return v == 0 }},
			{"faultline_index_lag_records", func(v float64) bool { return v == 0 }},
			{"faultline_index_queue_depth", func(v float64) bool { return v == 0 }},
		} {
			v, ok := m[want.name]
			if !ok || !want.ok(v) {
				return fmt.Errorf("%s = %v (exposed: %v)", want.name, v, ok)
			}
		}
		return nil
	})
}
