package shipper_test

import (
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/faultline/faultline/internal/testutil"
)

// The shipper process is killed with SIGKILL at several points while the
// file grows; after each restart it resumes from the last acknowledged
// offset. The stream ends up with every record, and the only duplicates are
// the overlap of what was in flight (unacknowledged) at each kill.
func TestKillRestartNoLoss(t *testing.T) {
	s := testutil.RunJetStreamServer(t)
	dir := t.TempDir()
	log := filepath.Join(dir, "worker.log")
	state := filepath.Join(dir, "state")
	const maxInFlight = 2
	args := shipperArgs(s.ClientURL(), "spark-1", state, "--path", log,
		"--max-in-flight", fmt.Sprint(maxInFlight), "--batch-bytes", "16384", "--log-level", "info")

	const total = 40000
	written := make(chan struct{})
	go func() {
		defer close(written)
		for i := 0; i < total; i += 200 {
			appendLines(t, log, "w", i, i+200)
			time.Sleep(10 * time.Millisecond) // ~2 s of writing
		}
	}()
	kills := []time.Duration{150 * time.Millisecond, 400 * time.Millisecond, 50 * time.Millisecond, 700 * time.Millisecond, 250 * time.Millisecond}
	for _, d := range kills {
		p := startShipper(t, args...)
		time.Sleep(d)
		p.kill()
	}
	<-written
	startShipper(t, args...)
	var c *contents
	testutil.CheckFor(t, 60*time.Second, 250*time.Millisecond, func() error {
		c = readStream(t, s.ClientURL())
		if c.distinct() < total {
			return fmt.Errorf("%d distinct records of %d", c.distinct(), total)
		}
		return nil
	})
	if m := missing(c, "w", total); len(m) > 0 {
		t.Fatalf("%d lines lost, first %q", len(m), m[0])
	}
	perBatch := 16384/80 + 1 // a record of this test encodes to > 80 bytes
	bound := len(kills) * (maxInFlight + 1) * perBatch
	t.Logf("%d records stored for %d distinct, %d duplicates after %d kills (bound %d)", len(c.records), c.distinct(), c.dups(), len(kills), bound)
	if c.dups() > bound {
		t.Fatalf("%d duplicates, more than the in-flight overlap bound %d", c.dups(), bound)
	}
}

// The NATS server goes away for several seconds mid-stream and comes back
// on the same port and store: nothing is lost and nothing is stored twice
// (retries resend the same batch with the same Nats-Msg-Id).
func TestNATSRestartNothingLostNothingDoubled(t *testing.T) {
	store := t.TempDir()
	s := testutil.RunJetStreamServerWith(t, &server.Options{Port: -1, StoreDir: store})
	url := s.ClientURL()
	port := s.Addr().(*net.TCPAddr).Port
	dir := t.TempDir()
	log := filepath.Join(dir, "vllm.log")
	p := startShipper(t, shipperArgs(url, "spark-1", filepath.Join(dir, "state"), "--path", log, "--log-level", "info")...)

	const total = 30000
	appendLines(t, log, "v", 0, 10000)
	testutil.CheckFor(t, 20*time.Second, 100*time.Millisecond, func() error {
		if c := readStream(t, url); c.distinct() < 5000 {
			return fmt.Errorf("%d records so far", c.distinct())
		}
		return nil
	})
	s.Shutdown()
	s.WaitForShutdown()
	appendLines(t, log, "v", 10000, 20000) // written while the server is down
	time.Sleep(3 * time.Second)            // the outage itself is what is tested
	s2 := testutil.RunJetStreamServerWith(t, &server.Options{Port: port, StoreDir: store})
	appendLines(t, log, "v", 20000, total)
	var c *contents
	testutil.CheckFor(t, 60*time.Second, 250*time.Millisecond, func() error {
		c = readStream(t, s2.ClientURL())
		if c.distinct() < total {
			return fmt.Errorf("%d distinct records of %d", c.distinct(), total)
		}
		return nil
	})
	if m := missing(c, "v", total); len(m) > 0 {
		t.Fatalf("%d lines lost, first %q", len(m), m[0])
	}
	if c.dups() != 0 {
		t.Fatalf("%d records stored twice", c.dups())
	}
	// State changes are logged once each, not once per retry.
	logs := p.stderr.String()
	if n := strings.Count(logs, "publish failed"); n > 1 {
		t.Errorf("'publish failed' logged %d times, want at most once per outage", n)
	}
	if !strings.Contains(logs, "nats disconnected") || !strings.Contains(logs, "nats reconnected") {
		t.Errorf("disconnect/reconnect not logged:\n%s", tail(logs, 3000))
	}
}
