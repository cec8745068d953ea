package shipper_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/internal/testutil"
)

// The shipper's state dir fills up while it ships: shipping goes on, the
// condition is logged once, /healthz answers 503 with the reason and the
// metrics count it; once there is room again the offsets are written by
// themselves, /healthz is ok, and a kill -9 after that stores nothing twice
// and loses nothing.
func TestStateDirFull(t *testing.T) {
	s := testutil.RunJetStreamServer(t)
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	disk := testutil.SmallDisk(t, state, 4<<20)
	log := filepath.Join(dir, "worker.log")
	args := shipperArgs(s.ClientURL(), "spark-1", state, "--path", log, "--log-level", "info", "--metrics-addr", "127.0.0.1:0")
	p := startShipper(t, args...)
	addr := metricsAddr(t, p)
	appendLines(t, log, "f", 0, 10000)
	waitStored(t, s.ClientURL(), 10000)
	if code, body := healthz(t, addr); code != http.StatusOK {
		t.Fatalf("/healthz %d %v before the disk is full", code, body)
	}

	disk.Fill(t, 0)
	appendLines(t, log, "f", 10000, 30000)
	waitStored(t, s.ClientURL(), 30000) // shipped all the same
	var body map[string]any
	testutil.CheckFor(t, 10*time.Second, 50*time.Millisecond, func() error {
		var code int
		code, body = healthz(t, addr)
		if code != http.StatusServiceUnavailable || !strings.Contains(fmt.Sprint(body["problems"]), "no space left") {
			return fmt.Errorf("/healthz %d %v", code, body)
		}
		return nil
	})
	t.Logf("/healthz while full: %v", body)
	if n := scrape(t, addr, `faultline_shipper_problem{what="offsets"}`); n != 1 {
		t.Errorf(`faultline_shipper_problem{what="offsets"} %v while full, want 1`, n)
	}
	if n := scrape(t, addr, `faultline_shipper_state_write_errors_total{file="offsets"}`); n < 1 {
		t.Errorf("no failed offsets write counted")
	}
	if off, size := savedOffset(state), fileSize(t, log); off >= size {
		t.Fatalf("offset %d of %d saved on a full disk: the test did not fill it", off, size)
	}

	disk.Free(t)
	testutil.CheckFor(t, 10*time.Second, 50*time.Millisecond, func() error {
		if code, body := healthz(t, addr); code != http.StatusOK {
			return fmt.Errorf("/healthz %d %v", code, body)
		}
		if off, size := savedOffset(state), fileSize(t, log); off != size {
			return fmt.Errorf("offset %d of %d saved", off, size)
		}
		return nil
	})
	logs := p.stderr.String()
	if n := strings.Count(logs, "cannot write offsets"); n != 1 {
		t.Errorf("the full state dir logged %d times, want once", n)
	}
	if !strings.Contains(logs, "offsets written again") {
		t.Errorf("the offsets' recovery is not logged")
	}
	p.kill()
	startShipper(t, shipperArgs(s.ClientURL(), "spark-1", state, "--path", log, "--log-level", "info")...)
	appendLines(t, log, "f", 30000, 35000)
	c := waitStored(t, s.ClientURL(), 35000)
	if m := missing(c, "f", 35000); len(m) > 0 {
		t.Fatalf("%d lines lost, first %q", len(m), m[0])
	}
	if c.dups() != 0 {
		t.Fatalf("%d records stored twice", c.dups())
	}
}

func healthz(t *testing.T, addr string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatalf("/healthz: %v", err)
	}
	defer resp.Body.Close()
	var body map[string]any
	json.NewDecoder(resp.Body).Decode(&body)
	return resp.StatusCode, body
}
