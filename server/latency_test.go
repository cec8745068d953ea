package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/internal/testutil"
	"github.com/faultline/faultline/shipper"
)

// BenchmarkLineToFinding measures the time from a proving line appended to
// a tailed file to its finding on the findings subject, through an
// in-process shipper with its defaults (the figure a user gets), the
// embedded NATS and the analyzer. It reports p50 and p99 besides the mean
// (ns/op). The announcer's settle window is part of it (BENCH_SETTLE, a
// duration, sets another):
//
//	taskset -c 1 env GOMAXPROCS=1 go test ./server -run '^$' -bench LineToFinding -benchtime 200x
func BenchmarkLineToFinding(b *testing.B) {
	dir := b.TempDir()
	ready := make(chan Addrs, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	var settle time.Duration
	if v := os.Getenv("BENCH_SETTLE"); v != "" {
		var err error
		if settle, err = time.ParseDuration(v); err != nil {
			b.Fatalf("BENCH_SETTLE: %v", err)
		}
	}
	// BENCH_PER_CLUSTER (default 50): runs per cluster; 1 makes every run a
	// new finding (its first announcement), else most are revisions.
	perCluster := 50
	if v := os.Getenv("BENCH_PER_CLUSTER"); v != "" {
		var err error
		if perCluster, err = strconv.Atoi(v); err != nil || perCluster < 1 || perCluster > 50 {
			b.Fatalf("BENCH_PER_CLUSTER=%q: want 1 to 50", v)
		}
	}
	go func() {
		done <- Run(ctx, Config{DataDir: filepath.Join(dir, "data"), NATSListen: "127.0.0.1:-1", HTTP: "127.0.0.1:0", Stdout: io.Discard,
			Log: quiet, Ready: func(a Addrs) { ready <- a }, Settle: settle})
	}()
	defer func() { cancel(); <-done }()
	var addrs Addrs
	select {
	case addrs = <-ready:
	case err := <-done:
		b.Fatalf("Run: %v", err)
	}
	nc, err := nats.Connect(addrs.NATS)
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	got := make(chan finding.Finding, 64)
	if _, err := nc.Subscribe("faultline.findings.>", func(m *nats.Msg) {
		var f finding.Finding
		if json.Unmarshal(m.Data, &f) == nil {
			got <- f
		}
	}); err != nil {
		b.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		b.Fatal(err)
	}

	// The engine remembers 64 values per fact and cluster: a new cluster
	// (its own shipper and file) every 50 runs keeps every run a new
	// finding. A new shipper is waited for (its first batch acknowledged)
	// outside the timer, so that its start is not counted as latency.
	shipCtx, stopShippers := context.WithCancel(ctx)
	var shippers []chan struct{}
	defer func() {
		stopShippers()
		for _, d := range shippers {
			<-d
		}
	}()
	var file string
	var metrics []*shipper.Metrics
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		if i%perCluster == 0 {
			b.StopTimer()
			live := filepath.Join(dir, fmt.Sprintf("live-%d", i/perCluster))
			if err := os.MkdirAll(live, 0o755); err != nil {
				b.Fatal(err)
			}
			file = filepath.Join(live, "monitor.log")
			appendLine(b, file, "2026-04-08 22:43:00,000\tINFO autoscaler.py:1 -- start")
			m := shipper.NewMetrics()
			metrics = append(metrics, m)
			d := make(chan struct{})
			shippers = append(shippers, d)
			go func() {
				defer close(d)
				cfg := shipper.Config{Paths: []string{filepath.Join(live, "*")}, Cluster: fmt.Sprintf("lat-%d", i/perCluster),
					Node: "spark-1", NATS: shipper.NATSOptions{URL: addrs.NATS}, StateDir: filepath.Join(live, ".state"),
					Log: quiet, Metrics: m}
				if err := shipper.Run(shipCtx, cfg); err != nil && shipCtx.Err() == nil {
					b.Errorf("shipper: %v", err)
				}
			}()
			testutil.CheckFor(b, 30*time.Second, 10*time.Millisecond, func() error {
				if n := counterValue(m, "faultline_shipper_acks_total"); n < 1 {
					return fmt.Errorf("shipper's first batch not acknowledged yet")
				}
				return nil
			})
			b.StartTimer()
		}
		ip := fmt.Sprintf("10.9.%d.%d", i/250, i%250+1)
		line := fmt.Sprintf("2026-04-08 22:43:17,953\tINFO autoscaler.py:1506 -- :event_summary:Error: No available node types can fulfill resource request {'node:%s': 0.001, 'GPU': 1.0}. Add suitable node types to this cluster to resolve", ip)
		start := time.Now()
		appendLine(b, file, line)
		timeout := time.After(30 * time.Second)
	wait:
		for {
			select {
			case f := <-got:
				if slices.Contains(f.Facts["requested_node"], ip) {
					lat = append(lat, time.Since(start))
					break wait
				}
			case <-timeout:
				b.Fatalf("run %d: no finding for %s after 30s", i, ip)
			}
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	p := func(q float64) float64 {
		return float64(lat[min(len(lat)-1, int(q*float64(len(lat))))]) / float64(time.Millisecond)
	}
	b.ReportMetric(p(0.50), "p50-ms")
	b.ReportMetric(p(0.99), "p99-ms")
	b.ReportMetric(float64(lat[len(lat)-1])/float64(time.Millisecond), "max-ms")
	over := len(lat) - sort.Search(len(lat), func(i int) bool { return lat[i] > 100*time.Millisecond })
	b.ReportMetric(100*float64(over)/float64(len(lat)), "%over-100ms")
	reportStages(b, metrics, addrs.HTTP)
}

// reportStages reports the mean of every stage the shipper's and serve's
// histograms observed in the run (ms per observation), where they exist.
func reportStages(b *testing.B, ms []*shipper.Metrics, httpAddr string) {
	sums := map[string][2]float64{} // name -> sum, count
	for _, m := range ms {
		mfs, err := m.Registry.Gather()
		if err != nil {
			b.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() != "faultline_shipper_stage_seconds" {
				continue
			}
			for _, mt := range mf.GetMetric() {
				name := "ship-" + mt.GetLabel()[0].GetValue()
				v := sums[name]
				sums[name] = [2]float64{v[0] + mt.GetHistogram().GetSampleSum(), v[1] + float64(mt.GetHistogram().GetSampleCount())}
			}
		}
	}
	resp, err := http.Get("http://" + httpAddr + "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		b.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^faultline_(stage_seconds|line_to_finding_seconds|stored_to_finding_seconds)_(sum|count)(?:\{stage="(\w+)"\})? (\S+)$`)
	for _, m := range re.FindAllStringSubmatch(string(body), -1) {
		name := "serve-" + m[1]
		if m[3] != "" {
			name = "serve-" + m[3]
		}
		f, _ := strconv.ParseFloat(m[4], 64)
		v := sums[name]
		if m[2] == "sum" {
			v[0] = f
		} else {
			v[1] = f
		}
		sums[name] = v
	}
	for name, v := range sums {
		if v[1] > 0 {
			b.ReportMetric(v[0]/v[1]*1000, strings.TrimSuffix(name, "_seconds")+"-ms")
		}
	}
}

// counterValue is a counter's value in a shipper's registry (0 if absent).
func counterValue(m *shipper.Metrics, name string) float64 {
	mfs, err := m.Registry.Gather()
	if err != nil {
		return 0
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			var v float64
			for _, s := range mf.GetMetric() {
				v += s.GetCounter().GetValue()
			}
			return v
		}
	}
	return 0
}
