package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/faultline/faultline/internal/testutil"
	"github.com/faultline/faultline/transport"
)

// The embedded NATS store's disk fills up while a shipper sends 100,000
// lines: JetStream stops at the first write that finds no space. /healthz
// says why (503) and the log says it once; once the space is back JetStream
// starts again by itself, with nothing restarted, and every line is stored
// and indexed once.
func TestNATSStoreFullRecovers(t *testing.T) {
	data := t.TempDir()
	disk := testutil.SmallDisk(t, filepath.Join(data, "nats"), 64<<20)
	r := startServer(t, Config{DataDir: data})
	// Room for the stream's first messages only.
	disk.Fill(t, 1<<20)

	logs := t.TempDir()
	const total = 100_000
	writeNumbered(t, filepath.Join(logs, "worker.log"), total)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel() // before startShipper's cleanup waits for it
	startShipper(t, ctx, r.addrs.NATS, "dgx", "spark-1", logs, false)

	// JetStream stops storing: /healthz says so.
	var health map[string]any
	testutil.CheckFor(t, 60*time.Second, 100*time.Millisecond, func() error {
		var code int
		code, health = getHealth(t, r.addrs.HTTP)
		if code != http.StatusServiceUnavailable || !strings.Contains(fmt.Sprint(health["status"]), "NATS store full") {
			return fmt.Errorf("/healthz %d %v", code, health)
		}
		return nil
	})
	t.Logf("/healthz while full: %v", health["status"])
	if n := metricValue(t, r.addrs.HTTP, "faultline_nats_store_ok"); n != 0 {
		t.Errorf("faultline_nats_store_ok %v while full, want 0", n)
	}
	time.Sleep(2 * time.Second) // full for a while: the shippers retry
	stored := streamRecords(t, r.addrs.NATS)
	if stored >= total {
		t.Fatalf("%d records stored on a full disk: the test did not fill it", stored)
	}

	disk.Free(t)
	testutil.CheckFor(t, 90*time.Second, 250*time.Millisecond, func() error {
		code, h := getHealth(t, r.addrs.HTTP)
		if code != http.StatusOK {
			return fmt.Errorf("/healthz %d %v", code, h)
		}
		if n, _ := h["records"].(float64); n < total {
			return fmt.Errorf("%v records indexed of %d", h["records"], total)
		}
		return nil
	})
	if n := streamRecords(t, r.addrs.NATS); n != total {
		t.Errorf("%d records in the stream after the space came back, want %d (%d stored while full)", n, total, stored)
	}
	if n := strings.Count(r.log.String(), "NATS store full"); n != 1 {
		t.Errorf("the full store logged %d times, want once", n)
	}
	if n := metricValue(t, r.addrs.HTTP, "faultline_nats_store_restarts_total"); n < 1 {
		t.Errorf("faultline_nats_store_restarts_total %v, want 1", n)
	}
}

// writeNumbered writes n lines "w line <i> ..." to path.
func writeNumbered(t *testing.T, path string, n int) {
	t.Helper()
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "w line %07d INFO something happened here\n", i)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func getHealth(t *testing.T, addr string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/healthz")
	if err != nil {
		return 0, map[string]any{"err": err.Error()}
	}
	defer resp.Body.Close()
	var body map[string]any
	json.NewDecoder(resp.Body).Decode(&body)
	return resp.StatusCode, body
}

// streamRecords counts the records of the stream by their Faultline-Count
// headers, each ID once.
func streamRecords(t *testing.T, url string) int {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := js.Stream(ctx, transport.StreamName)
	if err != nil {
		t.Fatalf("stream: %v", err)
	}
	info, err := st.Info(ctx)
	if err != nil || info.State.Msgs == 0 {
		return 0
	}
	cons, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for {
		m, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
		if err != nil {
			t.Fatalf("reading the stream: %v", err)
		}
		recs, err := transport.Decode(m.Data())
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			ids[r.ID] = true
		}
		if md, _ := m.Metadata(); md.Sequence.Stream >= info.State.LastSeq {
			return len(ids)
		}
	}
}

// metricValue is the value of the unlabelled metric name on serve's
// /metrics (-1 when it is not there).
func metricValue(t *testing.T, addr, name string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/metrics: %v", err)
	}
	mf := mfs[name]
	if mf == nil || len(mf.GetMetric()) == 0 {
		return -1
	}
	m := mf.GetMetric()[0]
	if m.GetGauge() != nil {
		return m.GetGauge().GetValue()
	}
	return m.GetCounter().GetValue()
}
