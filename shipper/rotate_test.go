package shipper_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/internal/testutil"
	"github.com/faultline/faultline/shipper"
)

// Rename rotation (Docker's -json.log -> .1, logrotate's create mode) and
// copytruncate while the writer keeps writing: nothing is lost.
func TestRotationWhileWriting(t *testing.T) {
	tests := []struct {
		name string
		// before is how much of a round must be in the stream before the
		// rotation: some, so that both rotate while the shipper is mid-file
		// (copytruncate: what it had not read yet is read from the copy).
		before float64
		rotate func(t *testing.T, path string, r int)
	}{
		{"rename", 0, func(t *testing.T, path string, r int) {
			if err := os.Rename(path, fmt.Sprintf("%s.%d", path, r)); err != nil {
				t.Fatal(err)
			}
		}},
		{"copytruncate", 0, func(t *testing.T, path string, r int) {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(path+".1", b, 0o644)
			if err := os.Truncate(path, 0); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := testutil.RunJetStreamServer(t)
			dir := t.TempDir()
			log := filepath.Join(dir, "raylet.out")
			startShipper(t, shipperArgs(s.ClientURL(), "spark-1", filepath.Join(dir, "state"), "--path", log, "--log-level", "info")...)
			const rounds, per = 6, 1500
			for r := 0; r < rounds; r++ {
				// Each round starts with a distinct first line so that the
				// truncated file gets a new identity, as real files do.
				appendLines(t, log, fmt.Sprintf("r%d", r), 0, per)
				if r == rounds-1 {
					break
				}
				prefix := fmt.Sprintf("r%d", r)
				testutil.CheckFor(t, 20*time.Second, 5*time.Millisecond, func() error {
					got := per - len(missing(readStream(t, s.ClientURL()), prefix, per))
					if got == 0 || float64(got) < tt.before*per {
						return fmt.Errorf("round %d: %d records in the stream", r, got)
					}
					return nil
				})
				tt.rotate(t, log, r)
				if tt.name == "rename" {
					// The writer has not reopened yet: it appends to the
					// renamed file (logrotate create mode before SIGHUP).
					appendLines(t, fmt.Sprintf("%s.%d", log, r), prefix, per, per+100)
				}
			}
			var c *contents
			testutil.CheckFor(t, 30*time.Second, 200*time.Millisecond, func() error {
				c = readStream(t, s.ClientURL())
				for r := 0; r < rounds; r++ {
					n := per
					if tt.name == "rename" && r < rounds-1 {
						n += 100
					}
					if m := missing(c, fmt.Sprintf("r%d", r), n); len(m) > 0 {
						return fmt.Errorf("%d lines missing, first %q", len(m), m[0])
					}
				}
				return nil
			})
			if c.dups() != 0 {
				t.Errorf("%d duplicates", c.dups())
			}

			for _, r := range c.records {
				if strings.Contains(r.Text, "\x00") {
					t.Fatalf("record with NUL bytes: %q", r.Text)
				}
			}
		})
	}
}

// Docker rotates twice between two looks of the shipper at the path (a busy
// container with a small max-size): path → .1 → .2, and the file in between
// was created, written and rotated unseen. It is found at .1 and read whole.
func TestDoubleRotationBetweenPolls(t *testing.T) {
	s := testutil.RunJetStreamServer(t)
	dir := t.TempDir()
	log := filepath.Join(dir, "c-json.log")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- shipper.Run(ctx, shipper.Config{
			Paths: []string{log}, Cluster: "c", Node: "spark-1",
			NATS: shipper.NATSOptions{URL: s.ClientURL()}, StateDir: t.TempDir(),
			// A slow look at the path, so that both rotations fall between two.
			PollInterval: 400 * time.Millisecond, RotateWait: 50 * time.Millisecond,
			FlushTimeout: 10 * time.Millisecond, BatchWait: 5 * time.Millisecond,
			Log: slog.New(slog.DiscardHandler), Metrics: shipper.NewMetrics(),
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("shipper: %v", err)
		}
	})
	const per, rounds = 300, 3
	appendLines(t, log, "a0", 0, per)
	want := map[string]int{"a0": per}
	for r := 0; r < rounds; r++ {
		testutil.CheckFor(t, 20*time.Second, 5*time.Millisecond, func() error {
			c := readStream(t, s.ClientURL())
			for prefix, n := range want {
				if m := missing(c, prefix, n); len(m) > 0 {
					return fmt.Errorf("%d lines of %s missing", len(m), prefix)
				}
			}
			return nil
		})
		// Both rotations at once, as Docker's json-file driver does them
		// (max-file 3): rename .1 → .2, current → .1, create the new file.
		mid, next := fmt.Sprintf("b%d", r), fmt.Sprintf("a%d", r+1)
		rotate := func() {
			os.Rename(log+".1", log+".2")
			if err := os.Rename(log, log+".1"); err != nil {
				t.Fatal(err)
			}
		}
		rotate()
		appendLines(t, log, mid, 0, per)
		rotate()
		appendLines(t, log, next, 0, per)
		want[mid], want[next] = per, per
	}
	var c *contents
	testutil.CheckFor(t, 20*time.Second, 50*time.Millisecond, func() error {
		c = readStream(t, s.ClientURL())
		for prefix, n := range want {
			if m := missing(c, prefix, n); len(m) > 0 {
				return fmt.Errorf("%d lines of %s missing, first %q", len(m), prefix, m[0])
			}
		}
		return nil
	})
	if c.dups() != 0 {
		t.Errorf("%d duplicates", c.dups())
	}
}
