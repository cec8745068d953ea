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
