package shipper_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/faultline/faultline/internal/testutil"
	"github.com/faultline/faultline/shipper"
)

// Input that is not shipped, or not yet, is never silent: a symlink loop, a
// FIFO, a stray .gz, a file whose first line has no newline, a line held
// back without its newline and a line longer than the limit without one are
// each logged once, naming the file and the reason, and counted.
func TestSkippedInputIsReported(t *testing.T) {
	s := testutil.RunJetStreamServer(t)
	dir := t.TempDir()
	in := func(name string) string { return filepath.Join(dir, name) }
	if err := os.Symlink("loop.log", in("loop.log")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("loopdir", in("loopdir")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(in("fifo.log"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(in("nul.log"), make([]byte, 3000), 0o644)
	os.WriteFile(in("partial.log"), []byte("first line\nno newline yet"), 0o644)
	os.WriteFile(in("huge.log"), append([]byte("first line\n"), bytes.Repeat([]byte("x"), 3<<20)...), 0o644)
	os.WriteFile(in("stray.log.2.gz"), []byte("\x1f\x8b not really"), 0o644)
	os.Mkdir(in("sub"), 0o755)
	appendLines(t, in("good.log"), "g", 0, 100)

	logs := &testutil.Buffer{}
	m := shipper.NewMetrics()
	runInProcess(t, shipper.Config{Paths: []string{in("*"), in("loopdir/*.log")}, NATS: shipper.NATSOptions{URL: s.ClientURL()},
		StateDir: t.TempDir(), Metrics: m, PollInterval: 20 * time.Millisecond,
		Log: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	want := map[string]float64{"symlink-loop": 2, "not-regular": 1, "compressed": 1, "no-first-line": 1, "held-back": 1}
	testutil.CheckFor(t, 20*time.Second, 50*time.Millisecond, func() error {
		for reason, n := range want {
			if got := counterValue(t, m, "faultline_shipper_skipped_total", reason); got < n {
				return fmt.Errorf("skipped_total{reason=%q} = %v, want %v", reason, got, n)
			}
		}
		if got := counterValue(t, m, "faultline_shipper_input_warnings_total", in("huge.log")); got != 1 {
			return fmt.Errorf("input_warnings_total{file=huge.log} = %v, want 1", got)
		}
		return nil
	})
	// Many more looks at the files: nothing is said twice.
	appendLines(t, in("good.log"), "g", 100, 200)
	waitLines(t, s.ClientURL(), 20*time.Second, map[string]int{"g": 200})
	time.Sleep(300 * time.Millisecond) // the reports are about time passing: 15 more polls
	for reason, n := range want {
		if got := counterValue(t, m, "faultline_shipper_skipped_total", reason); got != n {
			t.Errorf("skipped_total{reason=%q} = %v, want %v", reason, got, n)
		}
	}
	out := logs.String()
	for _, w := range []struct{ file, what string }{
		{in("loop.log"), "reason=symlink-loop"},
		{in("loopdir"), "reason=symlink-loop"},
		{in("fifo.log"), "reason=not-regular"},
		{in("stray.log.2.gz"), "reason=compressed"},
		{in("nul.log"), "first line has no newline"},
		{in("partial.log"), "held back"},
		{in("huge.log"), "line too long"},
	} {
		n := 0
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, "file="+w.file+" ") && strings.Contains(l, w.what) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%q about %s logged %d times, want once:\n%s", w.what, w.file, n, tail(out, 3000))
		}
	}
}
