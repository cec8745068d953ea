package shipper_test

import (
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/internal/testutil"
	"github.com/faultline/faultline/shipper"
)

// runInProcess runs a shipper in this process until the returned stop is
// called (or the test ends); stop waits for it to save its offsets, as a
// SIGTERM does.
func runInProcess(t *testing.T, cfg shipper.Config) (stop func()) {
	t.Helper()
	if cfg.Cluster == "" {
		cfg.Cluster = "dgx"
	}
	if cfg.Node == "" {
		cfg.Node = "spark-1"
	}
	if cfg.FlushTimeout == 0 {
		cfg.FlushTimeout = 10 * time.Millisecond
	}
	if cfg.BatchWait == 0 {
		cfg.BatchWait = 5 * time.Millisecond
	}
	if cfg.RotateWait == 0 {
		cfg.RotateWait = 50 * time.Millisecond
	}
	logs := &testutil.Buffer{}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- shipper.Run(ctx, cfg) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("shipper: %v", err)
		}
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("shipper log:\n%s", tail(logs.String(), 6000))
		}
	})
	return stop
}

// waitLines waits until every "<prefix> line i" for i < n of want is in the
// stream, then returns the stream.
func waitLines(t *testing.T, url string, total time.Duration, want map[string]int) *contents {
	t.Helper()
	var c *contents
	testutil.CheckFor(t, total, 100*time.Millisecond, func() error {
		c = readStream(t, url)
		for prefix, n := range want {
			if m := missing(c, prefix, n); len(m) > 0 {
				return fmt.Errorf("%d of %d lines of %q missing, first %q", len(m), n, prefix, m[0])
			}
		}
		return nil
	})
	return c
}

// gzipFile replaces src by src.gz, as logrotate's compress does.
func gzipFile(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(out)
	if _, err := io.Copy(zw, in); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	out.Close()
	in.Close()
	if err := os.Remove(src); err != nil {
		t.Fatal(err)
	}
}

// The shipper is down while logrotate rotates the file 4 times (name.1 …
// name.4, plain or compressed): on restart, the rest of the file it had
// been reading (now name.4) and the three files it never saw are read, oldest
// first, before the live file. Nothing is lost, nothing doubled.
func TestRotationsWhileDown(t *testing.T) {
	for _, compress := range []bool{false, true} {
		name := "numbered"
		if compress {
			name = "gz"
		}
		t.Run(name, func(t *testing.T) {
			s := testutil.RunJetStreamServer(t)
			dir := t.TempDir()
			log := filepath.Join(dir, "worker.log")
			state := filepath.Join(dir, "state")
			cfg := shipper.Config{Paths: []string{log}, NATS: shipper.NATSOptions{URL: s.ClientURL()}, StateDir: state}
			const per = 1000
			appendLines(t, log, "r0", 0, per)
			stop := runInProcess(t, cfg)
			waitLines(t, s.ClientURL(), 20*time.Second, map[string]int{"r0": per})
			stop()

			// Down: the file read so far grows, then 4 rotations.
			appendLines(t, log, "r0", per, 2*per)
			want := map[string]int{"r0": 2 * per}
			suffix := ""
			if compress {
				suffix = ".gz"
			}
			for r := 1; r <= 4; r++ {
				for n := 3; n >= 1; n-- { // shift .3 → .4, … first
					os.Rename(fmt.Sprintf("%s.%d%s", log, n, suffix), fmt.Sprintf("%s.%d%s", log, n+1, suffix))
				}
				if err := os.Rename(log, log+".1"); err != nil {
					t.Fatal(err)
				}
				if compress {
					gzipFile(t, log+".1", log+".1.gz")
				}
				p := fmt.Sprintf("r%d", r)
				appendLines(t, log, p, 0, per)
				want[p] = per
			}
			if _, err := os.Stat(fmt.Sprintf("%s.4%s", log, suffix)); err != nil {
				t.Fatalf("the first file is not at .4: %v", err)
			}
			runInProcess(t, cfg)
			c := waitLines(t, s.ClientURL(), 30*time.Second, want)
			if c.dups() != 0 {
				t.Errorf("%d records stored twice", c.dups())
			}
			if n := len(c.records); n != 6*per {
				t.Errorf("%d records in the stream, want %d", n, 6*per)
			}
		})
	}
}

// copytruncate while the shipper is down, and the new content starts with
// the same first line as the old (a banner): the file keeps its device,
// inode and first-line fingerprint, so only the checksum of the bytes before
// the saved offset tells that it was rewritten. The new content is read from
// the start, and the end of the old content from the copy.
func TestCopytruncateWhileDownSameFirstLine(t *testing.T) {
	s := testutil.RunJetStreamServer(t)
	dir := t.TempDir()
	log := filepath.Join(dir, "vllm.log")
	cfg := shipper.Config{Paths: []string{log}, NATS: shipper.NATSOptions{URL: s.ClientURL()}, StateDir: filepath.Join(dir, "state")}
	const banner = "vLLM API server version 0.6.3 starting"
	os.WriteFile(log, []byte(banner+"\n"), 0o644)
	appendLines(t, log, "old", 0, 2000)
	stop := runInProcess(t, cfg)
	waitLines(t, s.ClientURL(), 20*time.Second, map[string]int{"old": 2000})
	stop()

	appendLines(t, log, "old", 2000, 3000) // written while down, before the rotation
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(log+".1", b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(log, 0); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(log, []byte(banner+"\n"), 0o644)
	appendLines(t, log, "new", 0, 20000) // longer than the saved offset

	runInProcess(t, cfg)
	c := waitLines(t, s.ClientURL(), 30*time.Second, map[string]int{"old": 3000, "new": 20000})
	if c.dups() != 0 {
		t.Errorf("%d records stored twice", c.dups())
	}
	if n := c.texts()[banner]; n != 2 {
		t.Errorf("banner shipped %d times, want 2 (once per file)", n)
	}
	if n := len(c.records); n != 2+3000+20000 {
		t.Errorf("%d records in the stream, want %d", n, 2+3000+20000)
	}
}

// copytruncate while running, right after the writer wrote more lines and
// before the shipper read them: those lines are only in the copy, and are
// read from it (at the offset the shipper had reached) before the truncated
// file is read again from its start.
func TestCopytruncateReadsRemainderFromCopy(t *testing.T) {
	s := testutil.RunJetStreamServer(t)
	dir := t.TempDir()
	log := filepath.Join(dir, "raylet.out")
	// A slow look at the file so that writing and rotating fall between two.
	cfg := shipper.Config{Paths: []string{log}, NATS: shipper.NATSOptions{URL: s.ClientURL()}, StateDir: filepath.Join(dir, "state"),
		PollInterval: 500 * time.Millisecond}
	want := map[string]int{}
	runInProcess(t, cfg)
	for r := 0; r < 3; r++ {
		p := fmt.Sprintf("r%d", r)
		appendLines(t, log, p, 0, 500)
		want[p] = 500
		waitLines(t, s.ClientURL(), 20*time.Second, want)
		appendLines(t, log, p, 500, 800) // not read yet when the file is truncated
		want[p] = 800
		b, err := os.ReadFile(log)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(log+".1", b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(log, 0); err != nil {
			t.Fatal(err)
		}
	}
	appendLines(t, log, "end", 0, 100)
	want["end"] = 100
	c := waitLines(t, s.ClientURL(), 20*time.Second, want)
	if c.dups() != 0 {
		t.Errorf("%d records stored twice", c.dups())
	}
}

// The file is cut to a shorter prefix in the middle of a line while the
// shipper follows it, then written on: the prefix is not shipped again, the
// cut line's head is not shipped as a record of its own, and what is written
// after the cut arrives.
func TestTruncateToShorterPrefix(t *testing.T) {
	s := testutil.RunJetStreamServer(t)
	dir := t.TempDir()
	log := filepath.Join(dir, "nccl.log")
	m := shipper.NewMetrics()
	cfg := shipper.Config{Paths: []string{log}, NATS: shipper.NATSOptions{URL: s.ClientURL()}, StateDir: filepath.Join(dir, "state"), Metrics: m}
	runInProcess(t, cfg)
	appendLines(t, log, "a", 0, 3000)
	waitLines(t, s.ClientURL(), 20*time.Second, map[string]int{"a": 3000})
	fi, err := os.Stat(log)
	if err != nil {
		t.Fatal(err)
	}
	cut := fi.Size()/2 + 17 // inside a line
	if err := os.Truncate(log, cut); err != nil {
		t.Fatal(err)
	}
	testutil.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		if n := counterValue(t, m, "faultline_shipper_rotations_total", "truncate"); n < 1 {
			return fmt.Errorf("truncation not seen yet")
		}
		return nil
	})
	appendLines(t, log, "b", 0, 1000)
	c := waitLines(t, s.ClientURL(), 20*time.Second, map[string]int{"a": 3000, "b": 1000})
	if c.dups() != 0 {
		t.Errorf("%d records stored twice", c.dups())
	}
	for _, r := range c.records {
		if !strings.HasSuffix(r.Text, "INFO something happened here") || !(strings.HasPrefix(r.Text, "a line") || strings.HasPrefix(r.Text, "b line")) {
			t.Errorf("torn record %q at offset %d", r.Text, r.Offset)
		}
	}
	if n := len(c.records); n != 4000 {
		t.Errorf("%d records in the stream, want 4000", n)
	}
}

// counterValue reads one labelled counter (or the sum over label values
// when label is "") from the shipper's registry.
func counterValue(t testing.TB, m *shipper.Metrics, name, label string) float64 {
	t.Helper()
	mfs, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, mt := range mf.GetMetric() {
			match := label == ""
			for _, lp := range mt.GetLabel() {
				if lp.GetValue() == label {
					match = true
				}
			}
			if !match {
				continue
			}
			if c := mt.GetCounter(); c != nil {
				sum += c.GetValue()
			} else if g := mt.GetGauge(); g != nil {
				sum += g.GetValue()
			}
		}
	}
	return sum
}
