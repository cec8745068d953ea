package shipper_test

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/internal/testutil"
)

// writeManyFiles writes files files of lines lines each, "m<f> line <i> ...".
func writeManyFiles(t *testing.T, dir string, files, lines int) {
	t.Helper()
	for f := 0; f < files; f++ {
		var b strings.Builder
		for i := 0; i < lines; i++ {
			fmt.Fprintf(&b, "m%d line %07d INFO something happened here\n", f, i)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%05d.log", f)), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// procStatus reads a field of /proc/PID/status (kB for memory).
func procStatus(pid int, field string) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			n, _ := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			return n
		}
	}
	return -1
}

func openFDs(pid int) int {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return -1
	}
	return len(ents)
}

// 10,000 files tailed by one shipper, with a descriptor limit of 256 and
// with plenty: every line of every file is shipped (none given up as
// unreadable), the files written again later too; the shipper holds a
// bounded number of them open and a bounded heap, and its metrics answer
// within a second all along.
func TestManyFilesFewDescriptors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		nofile int
	}{{"ulimit-256", 256}, {"ulimit-20000", 20000}} {
		t.Run(tc.name, func(t *testing.T) {
			const files, lines = 10000, 10
			s := testutil.RunJetStreamServer(t)
			dir := t.TempDir()
			logs := filepath.Join(dir, "logs")
			os.Mkdir(logs, 0o755)
			writeManyFiles(t, logs, files, lines)
			args := shipperArgs(s.ClientURL(), "spark-1", filepath.Join(dir, "state"), "--path", filepath.Join(logs, "*.log"),
				"--log-level", "warn", "--metrics-addr", "127.0.0.1:0", "--log-level", "info")
			// ulimit -n sets the soft and the hard limit: Go raises a
			// process's soft limit to its hard limit at start.
			cmd := exec.Command("sh", append([]string{"-c", fmt.Sprintf(`ulimit -n %d && exec "$0" "$@"`, tc.nofile), shipperBin(t)}, args...)...)
			p := &proc{cmd: cmd, stderr: &testutil.Buffer{}, done: make(chan struct{})}
			cmd.Stderr = p.stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			go func() { cmd.Wait(); close(p.done) }()
			t.Cleanup(func() {
				p.kill()
				if t.Failed() {
					t.Logf("shipper stderr:\n%s", tail(p.stderr.String(), 3000))
				}
			})
			addr := metricsAddr(t, p)
			pid := cmd.Process.Pid
			maxFDs, slowest := 0, time.Duration(0)
			published := func(want int) func() error {
				return func() error {
					start := time.Now()
					client := http.Client{Timeout: 5 * time.Second}
					resp, err := client.Get("http://" + addr + "/metrics")
					if err != nil {
						t.Fatalf("/metrics: %v", err)
					}
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					slowest = max(slowest, time.Since(start))
					maxFDs = max(maxFDs, openFDs(pid))
					for _, l := range strings.Split(string(b), "\n") {
						if v, ok := strings.CutPrefix(l, "faultline_shipper_records_published_total "); ok {
							if n, _ := strconv.ParseFloat(v, 64); int(n) >= want {
								return nil
							}
							return fmt.Errorf("%s records acknowledged of %d", v, want)
						}
					}
					return fmt.Errorf("nothing acknowledged yet")
				}
			}
			testutil.CheckFor(t, 180*time.Second, 250*time.Millisecond, published(files*lines))
			// Written again: parked files are opened again.
			for f := 0; f < files; f += 100 {
				fh, err := os.OpenFile(filepath.Join(logs, fmt.Sprintf("f%05d.log", f)), os.O_APPEND|os.O_WRONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				fmt.Fprintf(fh, "m%d line %07d INFO something happened here\n", f, lines)
				fh.Close()
			}
			testutil.CheckFor(t, 60*time.Second, 250*time.Millisecond, published(files*lines+files/100))
			c := waitStored(t, s.ClientURL(), files*lines+files/100)
			if m := missingMany(c, files, lines); len(m) > 0 {
				t.Errorf("%d lines missing, first %q", len(m), m[0])
			}
			if c.dups() != 0 {
				t.Errorf("%d records stored twice", c.dups())
			}
			hwm := procStatus(pid, "VmHWM")
			unreadable := scrape(t, addr, `faultline_shipper_skipped_total{reason="unreadable"}`)
			t.Logf("%d files: peak %d descriptors open, peak RSS %d MB, slowest /metrics %v, %v given up as unreadable",
				files, maxFDs, hwm/1024, slowest.Round(time.Millisecond), unreadable)
			if unreadable != 0 {
				t.Errorf("%v files given up as unreadable", unreadable)
			}
			if slowest > 2*time.Second {
				t.Errorf("/metrics took %v", slowest)
			}
			if maxFDs > 1200 {
				t.Errorf("%d descriptors open at once", maxFDs)
			}
			if hwm > 300<<10 {
				t.Errorf("peak RSS %d MB", hwm/1024)
			}
		})
	}
}

// missingMany returns the lines of writeManyFiles (and the one more of every
// hundredth file) that the stream does not hold.
func missingMany(c *contents, files, lines int) []string {
	texts := c.texts()
	var out []string
	for f := 0; f < files; f++ {
		n := lines
		if f%100 == 0 {
			n++
		}
		for i := 0; i < n; i++ {
			if s := fmt.Sprintf("m%d line %07d INFO something happened here", f, i); texts[s] == 0 {
				out = append(out, s)
			}
		}
	}
	return out
}
