package shipper_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/internal/testutil"
)

// Rename rotation (Docker's -json.log -> .1, logrotate's create mode) and
// copytruncate while the writer keeps writing: nothing is lost.
func TestRotationWhileWriting(t *testing.T) {
	tests := []struct {
		name string
		// before is how much of a round must be in the stream before the
		// rotation: rename rotates while the shipper is mid-file;
		// copytruncate loses, in every shipper, what was not read before the
		// truncation, so it waits for the round and checks that the file
		// regrowing at once is followed.
		before float64
		rotate func(t *testing.T, path string, r int)
	}{
		{"rename", 0, func(t *testing.T, path string, r int) {
			if err := os.Rename(path, fmt.Sprintf("%s.%d", path, r)); err != nil {
				t.Fatal(err)
			}
		}},
		{"copytruncate", 1, func(t *testing.T, path string, r int) {
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
