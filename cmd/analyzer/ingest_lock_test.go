package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/index"
)

// holdIndex opens dataDir for writing, as a running `serve` does, and keeps
// it open (bbolt's flock on every shard) until the test ends.
func holdIndex(t *testing.T, dataDir string) {
	t.Helper()
	x, err := index.Open(dataDir, index.Options{Shards: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
}

// lockWait is how long opening an index waits for a lock another process
// holds (index's bolt_timeout).
const lockWait = 3 * time.Second

// runTimed runs the analyzer in-process with ctx and returns its stderr,
// exit code and how long it took; it fails the test if it takes longer
// than limit.
func runTimed(t *testing.T, ctx context.Context, limit time.Duration, args ...string) (string, int, time.Duration) {
	t.Helper()
	var out, errb bytes.Buffer
	done := make(chan int, 1)
	start := time.Now()
	go func() { done <- run(ctx, args, nil, &out, &errb) }()
	select {
	case code := <-done:
		return errb.String(), code, time.Since(start)
	case <-time.After(limit):
		t.Fatalf("analyzer %v still running after %v", args, limit)
		return "", 0, 0
	}
}

// TestIngestOnAHeldIndexFails: ingest into an index that serve holds used
// to wait for the lock forever. It fails after a few seconds with the
// message search gives, and exits at once when interrupted.
func TestIngestOnAHeldIndexFails(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	holdIndex(t, dir)
	input := filepath.Join(seed, "failed")

	searchErr, code, _ := runTimed(t, context.Background(), 20*time.Second, "search", "--data-dir", dir, "x")
	if code != 2 {
		t.Fatalf("search of a held index: exit %d, want 2 (an error): %s", code, searchErr)
	}
	ingestErr, code, took := runTimed(t, context.Background(), 20*time.Second, "ingest", "-q", "--data-dir", dir, input)
	if code != 1 {
		t.Fatalf("ingest into a held index: exit %d, want 1: %s", code, ingestErr)
	}
	t.Logf("ingest gave up after %v: %s", took.Round(time.Millisecond), strings.TrimSpace(ingestErr))
	const hint = "is 'analyzer serve' or 'ingest' writing it?"
	for name, msg := range map[string]string{"search": searchErr, "ingest": ingestErr} {
		if !strings.Contains(msg, hint) || !strings.Contains(msg, "timeout") {
			t.Errorf("%s says %q, want a timeout and %q", name, msg, hint)
		}
	}

	// Ctrl-C (or SIGTERM: main turns both into ctx) while waiting for the
	// lock: ingest stops long before the lock wait would time out.
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	// openIndex leaves the interrupted open to end by itself (the lock wait
	// cannot be cut short): hold the lock until it has timed out, or the
	// index opens when holdIndex's cleanup closes it and writes into the
	// directory while TempDir removes it (seen once in CI: "unlinkat ...
	// directory not empty").
	interrupted := time.Now()
	t.Cleanup(func() { time.Sleep(time.Until(interrupted.Add(lockWait + time.Second))) })
	msg, code, took := runTimed(t, ctx, 20*time.Second, "ingest", "-q", "--data-dir", dir, input)
	if code == 0 || took > 2*time.Second {
		t.Fatalf("interrupted ingest: exit %d after %v, want a failure within 2s: %s", code, took, msg)
	}
	if !strings.Contains(msg, "interrupted") {
		t.Errorf("interrupted ingest says %q, want it to say it was interrupted", msg)
	}
}
