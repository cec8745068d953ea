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
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/internal/testutil"
	"github.com/faultline/faultline/parsers"
	"github.com/faultline/faultline/pipeline"
	"github.com/faultline/faultline/rule"
	"github.com/faultline/faultline/shipper"
	"github.com/faultline/faultline/transport"
)

const seedDir = "../testdata/logs/seed/failed"

// running is a server started by startServer.
type running struct {
	addrs  Addrs
	stdout *testutil.Buffer
	log    *testutil.Buffer
	stop   func() error
	ready  chan Addrs
	done   chan error
}

// startServer runs Run in the background with an embedded NATS on a free
// port and HTTP on a free port, and waits until it is ready.
func startServer(t *testing.T, cfg Config) *running {
	t.Helper()
	r := launchServer(t, cfg)
	r.waitReady(t)
	return r
}

// launchServer is startServer without the wait (servers that are ready
// only together: an embedded NATS cluster elects its leader once most of
// its servers are up).
func launchServer(t *testing.T, cfg Config) *running {
	t.Helper()
	if cfg.DataDir == "" {
		cfg.DataDir = t.TempDir()
	}
	if cfg.NATSListen == "" && cfg.NATS.URL == "" {
		cfg.NATSListen = "127.0.0.1:-1"
	}
	if cfg.HTTP == "" {
		cfg.HTTP = "127.0.0.1:0"
	}
	if cfg.DemoShip == nil {
		cfg.DemoShip = demoShip
	}
	r := &running{stdout: &testutil.Buffer{}, log: &testutil.Buffer{}, ready: make(chan Addrs, 1), done: make(chan error, 1)}
	cfg.Stdout = r.stdout
	cfg.Log = slog.New(slog.NewTextHandler(io.MultiWriter(r.log, testWriter{t}), &slog.HandlerOptions{Level: slog.LevelInfo}))
	cfg.Ready = func(a Addrs) { r.ready <- a }
	ctx, cancel := context.WithCancel(context.Background())
	go func() { r.done <- Run(ctx, cfg) }()
	var once sync.Once
	var err error
	r.stop = func() error {
		once.Do(func() { cancel(); err = <-r.done })
		return err
	}
	t.Cleanup(func() { r.stop() })
	return r
}

func (r *running) waitReady(t *testing.T) {
	t.Helper()
	select {
	case r.addrs = <-r.ready:
	case err := <-r.done:
		r.done <- err
		t.Fatalf("Run: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("server not ready after 30s")
	}
}

// testWriter sends the server's log to t.Log (shown with -v or on failure).
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// findingSub collects findings published on faultline.findings.>.
type findingSub struct {
	mu  sync.Mutex
	got []finding.Finding
}

func subscribeFindings(t testing.TB, url string) *findingSub {
	t.Helper()
	// serve's /healthz answers before its embedded NATS is up (HTTP
	// first): wait for the connection rather than fail on the first try.
	nc := connectRetrying(t, url)
	fs := &findingSub{}
	if _, err := nc.Subscribe("faultline.findings.>", func(m *nats.Msg) {
		var f finding.Finding
		if err := json.Unmarshal(m.Data, &f); err != nil {
			t.Errorf("finding on %s: %v", m.Subject, err)
			return
		}
		fs.mu.Lock()
		fs.got = append(fs.got, f)
		fs.mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return fs
}

func (fs *findingSub) all() []finding.Finding {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return slices.Clone(fs.got)
}

// waitHigh waits for a high-confidence finding of rule id.
func waitFinding(t testing.TB, get func() []finding.Finding, id, confidence string) finding.Finding {
	t.Helper()
	var found finding.Finding
	testutil.CheckFor(t, 30*time.Second, 20*time.Millisecond, func() error {
		for _, f := range get() {
			if f.Rule == id && (confidence == "" || f.Confidence == confidence) {
				found = f
				return nil
			}
		}
		return fmt.Errorf("no %s finding (confidence %q) yet", id, confidence)
	})
	return found
}

// demoShip is cmd/analyzer's: the demo's nodes are replayed by real shippers.
func demoShip(ctx context.Context, node string, paths []string, nats transport.NATSOptions, stateDir string, log *slog.Logger) error {
	return shipper.Run(ctx, shipper.Config{Paths: paths, Node: node, NATS: nats, StateDir: stateDir, Log: log, Metrics: shipper.NewMetrics()})
}

// startShipper runs an in-process shipper tailing dir for node.
func startShipper(t *testing.T, ctx context.Context, url, cluster, node, dir string, fast bool) {
	t.Helper()
	cfg := shipper.Config{
		Paths:    []string{filepath.Join(dir, "*"), filepath.Join(dir, "*", "*"), filepath.Join(dir, "*", "*", "*")},
		Cluster:  cluster,
		Node:     node,
		NATS:     shipper.NATSOptions{URL: url},
		StateDir: t.TempDir(),
		Log:      slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Metrics:  shipper.NewMetrics(),
	}
	if fast {
		cfg.FlushTimeout = 10 * time.Millisecond
		cfg.BatchWait = 2 * time.Millisecond
		cfg.PollInterval = 5 * time.Millisecond
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := shipper.Run(ctx, cfg); err != nil && ctx.Err() == nil {
			t.Errorf("shipper %s: %v", node, err)
		}
	}()
	t.Cleanup(func() { <-done })
}

// diagnose runs the offline path (what `analyzer diagnose` does) over the
// seed scenario.
func diagnose(t testing.TB) []finding.Finding {
	t.Helper()
	rules, err := rule.LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	e := rule.NewEngine(rules)
	inputs, err := pipeline.ParseArgs([]string{"spark-1=" + seedDir + "/spark-1", "spark-2=" + seedDir + "/spark-2"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pipeline.Replay(context.Background(), inputs, pipeline.Options{Cluster: rule.DefaultCluster},
		func(ev *parsers.Event) error { e.Observe(ev); return nil }); err != nil {
		t.Fatal(err)
	}
	return e.Findings()
}

// verdicts is the comparable part of findings: rule, cause, severity, facts.
func verdicts(fs []finding.Finding) []string {
	var out []string
	for _, f := range fs {
		facts := map[string][]string{}
		for k, v := range f.Facts {
			v = slices.Clone(v)
			sort.Strings(v)
			facts[k] = v
		}
		b, _ := json.Marshal(facts)
		out = append(out, fmt.Sprintf("%s|%s|%s|%s", f.Rule, f.Cause, f.Severity, b))
	}
	sort.Strings(out)
	return out
}

func getFindings(t testing.TB, httpAddr string) []finding.Finding {
	resp, err := http.Get("http://" + httpAddr + "/api/findings")
	if err != nil {
		t.Logf("GET /api/findings: %v", err)
		return nil
	}
	defer resp.Body.Close()
	var fs []finding.Finding
	if err := json.NewDecoder(resp.Body).Decode(&fs); err != nil {
		t.Errorf("decode /api/findings: %v", err)
	}
	return fs
}

// connectRetrying connects to an analyzer's NATS that may still be starting
// (or restarting), waits until connected, and closes at the test's end.
func connectRetrying(t testing.TB, url string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url, nats.RetryOnFailedConnect(true), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	testutil.CheckFor(t, 20*time.Second, 20*time.Millisecond, func() error {
		if !nc.IsConnected() {
			return fmt.Errorf("not connected to %s", url)
		}
		return nil
	})
	return nc
}

// embeddedURL is the client URL of the embedded NATS of an analyzer
// process serving dataDir on addr: with the token serve made for that data
// dir (DATA_DIR/nats.token), waited for while serve starts.
func embeddedURL(t testing.TB, dataDir, addr string) string {
	t.Helper()
	var tok string
	testutil.CheckFor(t, 30*time.Second, 20*time.Millisecond, func() error {
		b, err := os.ReadFile(filepath.Join(dataDir, natsTokenFile))
		if err != nil {
			return err
		}
		tok = strings.TrimSpace(string(b))
		return nil
	})
	return "nats://" + tok + "@" + addr
}
