package server

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/faultline/faultline/internal/testutil"
)

// TestStageMetricsServed: after a line live through a shipper raised a
// finding, serve's /metrics has observations of every stage of the batch
// and of the finding's latency from the shipper's read and from JetStream.
func TestStageMetricsServed(t *testing.T) {
	srv := startServer(t, Config{})
	sub := subscribeFindings(t, srv.addrs.NATS)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	live := t.TempDir()
	file := filepath.Join(live, "monitor.log")
	appendLine(t, file, "2026-04-08 22:43:00,000\tINFO autoscaler.py:1 -- start")
	startShipper(t, ctx, srv.addrs.NATS, "stages", "spark-1", live, false)
	appendLine(t, file, "2026-04-08 22:43:17,953\tINFO autoscaler.py:1506 -- :event_summary:Error: No available node types can fulfill resource request {'node:10.9.0.1': 0.001, 'GPU': 1.0}. Add suitable node types to this cluster to resolve")
	testutil.CheckFor(t, 30*time.Second, 20*time.Millisecond, func() error {
		if len(sub.all()) == 0 {
			return errors.New("no finding yet")
		}
		return nil
	})
	want := map[string]string{
		"consume_wait": `faultline_stage_seconds_count{stage="consume_wait"}`,
		"decode":       `faultline_stage_seconds_count{stage="decode"}`,
		"rules":        `faultline_stage_seconds_count{stage="rules"}`,
		"announce":     `faultline_stage_seconds_count{stage="announce"}`,
		"index":        `faultline_stage_seconds_count{stage="index"}`,
		"line":         `faultline_line_to_finding_seconds_count`,
		"stored":       `faultline_stored_to_finding_seconds_count`,
	}
	// index is observed after the batch's announcements: poll for it.
	testutil.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		code, body := get(t, "http://"+srv.addrs.HTTP+"/metrics", "")
		if code != 200 {
			return fmt.Errorf("GET /metrics = %d", code)
		}
		for stage, series := range want {
			m := regexp.MustCompile(regexp.QuoteMeta(series) + ` (\d+)`).FindStringSubmatch(body)
			if m == nil {
				return fmt.Errorf("/metrics lacks %s", series)
			}
			if n, _ := strconv.Atoi(m[1]); n == 0 {
				return fmt.Errorf("%s (%s) has no observation", series, stage)
			}
		}
		return nil
	})
}
