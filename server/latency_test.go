package server

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/faultline/faultline/rule"
)

// TestLatency measures the time from a proving line appended to a tailed
// file to its finding on the findings subject, through an in-process
// shipper (fast settings), the embedded NATS and the analyzer.
//
//	FAULTLINE_LATENCY=200 go test ./server -run TestLatency -v
func TestLatency(t *testing.T) {
	runs, _ := strconv.Atoi(os.Getenv("FAULTLINE_LATENCY"))
	if runs <= 0 {
		t.Skip("set FAULTLINE_LATENCY=RUNS to measure")
	}
	srv := startServer(t, Config{})
	nc, err := nats.Connect(srv.addrs.NATS)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	got := make(chan rule.Finding, 16)
	nc.Subscribe("faultline.findings.>", func(m *nats.Msg) {
		var f rule.Finding
		if json.Unmarshal(m.Data, &f) == nil {
			got <- f
		}
	})
	nc.Flush()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The engine remembers 64 values per fact and cluster: a new cluster
	// (its own shipper and file) every 50 runs keeps every run a new finding.
	var file string
	var lat []time.Duration
	for i := range runs {
		if i%50 == 0 {
			live := t.TempDir()
			startShipper(t, ctx, srv.addrs.NATS, fmt.Sprintf("lat-%d", i/50), "spark-1", live, false) // the shipper's defaults: the figure a user gets
			file = filepath.Join(live, "monitor.log")
			appendLine(t, file, "2026-04-08 22:43:00,000\tINFO autoscaler.py:1 -- start")
		}
		ip := fmt.Sprintf("10.9.%d.%d", i/250, i%250+1)
		line := fmt.Sprintf("2026-04-08 22:43:17,953\tINFO autoscaler.py:1506 -- :event_summary:Error: No available node types can fulfill resource request {'node:%s': 0.001, 'GPU': 1.0}. Add suitable node types to this cluster to resolve", ip)
		start := time.Now()
		appendLine(t, file, line)
		timeout := time.After(10 * time.Second)
	wait:
		for {
			select {
			case f := <-got:
				if slices.Contains(f.Facts["requested_node"], ip) {
					lat = append(lat, time.Since(start))
					break wait
				}
			case <-timeout:
				t.Fatalf("run %d: no finding for %s after 10s", i, ip)
			}
		}
	}
	slices.Sort(lat)
	p := func(q float64) time.Duration { return lat[min(len(lat)-1, int(q*float64(len(lat))))] }
	t.Logf("latency over %d runs: p50 %v, p90 %v, p99 %v, max %v", len(lat), p(0.50), p(0.90), p(0.99), lat[len(lat)-1])
	if p(0.99) > 250*time.Millisecond {
		t.Errorf("p99 %v over the 250 ms target", p(0.99))
	}
}
