package server

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/faultline/faultline/internal/testutil"
)

// The webhook is down when a finding fires and serve is killed (SIGKILL) a
// moment later; the webhook comes back and serve is restarted: the finding
// is posted then, and each version of it once (before: never, the queue was
// in memory only).
func TestWebhookSurvivesKill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the analyzer binary")
	}
	var down atomic.Bool
	down.Store(true)
	var mu sync.Mutex
	var failed int
	posts := map[string]int{} // rule|id/updates/status -> posts that got a 2xx
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		if down.Load() {
			failed++
			http.Error(w, "down", http.StatusBadGateway)
			return
		}
		var p payload
		if err := json.Unmarshal(b, &p); err != nil {
			t.Errorf("webhook body %s: %v", b, err)
		}
		posts[fmt.Sprintf("%s|%s/%d/%s", p.Finding.Rule, p.Finding.ID, p.Finding.Updates, p.Finding.Status)]++
	}))
	defer hook.Close()

	bin := buildBin(t, "analyzer")
	data := t.TempDir()
	natsAddr, httpAddr := freePort(t), freePort(t)
	args := []string{"--data-dir", data, "--nats-listen", natsAddr, "--http", httpAddr, "--log-level", "info", "--webhook", hook.URL}
	url := "nats://" + natsAddr
	p1 := startAnalyzer(t, bin, args...)
	nc, err := nats.Connect(url, nats.RetryOnFailedConnect(true), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	testutil.CheckFor(t, 20*time.Second, 20*time.Millisecond, func() error {
		if !nc.IsConnected() {
			return fmt.Errorf("not connected to %s", url)
		}
		return nil
	})
	sub := subscribeFindings(t, url)
	js, _ := jetstream.New(nc)
	publishRecords(t, js, seedRecords(t), 3)
	waitFinding(t, sub.all, "ray-node-ip-mismatch", "")
	testutil.CheckFor(t, 20*time.Second, 20*time.Millisecond, func() error {
		mu.Lock()
		defer mu.Unlock()
		if failed == 0 {
			return fmt.Errorf("no delivery attempted yet")
		}
		return nil
	})
	p1.cmd.Process.Signal(syscall.SIGKILL)
	p1.cmd.Wait()

	down.Store(false)
	startAnalyzer(t, bin, args...)
	testutil.CheckFor(t, 30*time.Second, 50*time.Millisecond, func() error {
		mu.Lock()
		defer mu.Unlock()
		for k := range posts {
			if strings.HasPrefix(k, "ray-node-ip-mismatch|") {
				return nil
			}
		}
		return fmt.Errorf("finding not posted after the restart (posts %v)", posts)
	})
	// Retries and redeliveries settle within a few seconds; none of them
	// may post a version twice.
	time.Sleep(3 * time.Second)
	mu.Lock()
	defer mu.Unlock()
	for k, n := range posts {
		if n != 1 {
			t.Errorf("%s posted %d times", k, n)
		}
	}
}
