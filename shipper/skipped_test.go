package shipper_test

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
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

// A file the shipper may not read is reported once, with its reason, and
// counted. As root (who reads everything), the shipper runs as nobody.
func TestUnreadableFileIsReported(t *testing.T) {
	s := testutil.RunJetStreamServer(t)
	dir := t.TempDir()
	os.Chmod(filepath.Dir(dir), 0o755) // t.TempDir's parent is private
	os.Chmod(dir, 0o755)
	secret := filepath.Join(dir, "secret.log")
	appendLines(t, secret, "s", 0, 10)
	os.Chmod(secret, 0)
	appendLines(t, filepath.Join(dir, "good.log"), "g", 0, 10)
	state := filepath.Join(dir, "state")
	os.Mkdir(state, 0o777)
	os.Chmod(state, 0o777)
	args := shipperArgs(s.ClientURL(), "spark-1", state, "--path", filepath.Join(dir, "*.log"), "--metrics-addr", "127.0.0.1:0", "--log-level", "info")
	bin := shipperBin(t)
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		// The test binary's folder is private: run a copy from this one.
		b, err := os.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		bin = filepath.Join(dir, "shipper")
		if err := os.WriteFile(bin, b, 0o755); err != nil {
			t.Fatal(err)
		}
		cred = &syscall.Credential{Uid: 65534, Gid: 65534}
	}
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	p := &proc{cmd: cmd, stderr: &testutil.Buffer{}, done: make(chan struct{})}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("shipper stderr:\n%s", tail(p.stderr.String(), 4000))
		}
	})
	waitLines(t, s.ClientURL(), 20*time.Second, map[string]int{"g": 10})
	var addr string
	testutil.CheckFor(t, 10*time.Second, 50*time.Millisecond, func() error {
		for _, l := range strings.Split(p.stderr.String(), "\n") {
			if i := strings.Index(l, "msg=metrics addr="); i >= 0 {
				addr = strings.TrimSpace(l[i+len("msg=metrics addr="):])
				return nil
			}
		}
		return fmt.Errorf("metrics address not logged")
	})
	var metrics string
	testutil.CheckFor(t, 10*time.Second, 50*time.Millisecond, func() error {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			return err
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		metrics = string(b)
		if !strings.Contains(metrics, `faultline_shipper_skipped_total{reason="unreadable"} 1`) {
			return fmt.Errorf("no unreadable file counted")
		}
		return nil
	})
	n := 0
	for _, l := range strings.Split(p.stderr.String(), "\n") {
		if strings.Contains(l, "file="+secret+" ") && strings.Contains(l, "reason=unreadable") && strings.Contains(l, "permission denied") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("unreadable %s logged %d times, want once", secret, n)
	}
}
