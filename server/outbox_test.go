package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/faultline/faultline/finding"
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
	p1 := startAnalyzer(t, bin, args...)
	url := embeddedURL(t, data, natsAddr)
	nc := connectRetrying(t, url)
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

// One launch's findings are posted without repeats: versions that come in
// quick succession are posted once, at the latest, and no payload is posted
// twice (one finding produced 10 posts within 50 ms, 7 of them identical).
func TestWebhookPostsNoRepeats(t *testing.T) {
	var mu sync.Mutex
	bodies := map[string]int{}
	var posts []finding.Finding
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var p payload
		json.Unmarshal(b, &p)
		mu.Lock()
		bodies[string(b)]++
		posts = append(posts, p.Finding)
		mu.Unlock()
	}))
	defer hook.Close()
	srv := startServer(t, Config{Webhook: hook.URL})
	nc, err := nats.Connect(srv.addrs.NATS)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	publishRecords(t, js, seedRecords(t), 50)
	want := verdicts(diagnose(t))
	testutil.CheckFor(t, 30*time.Second, 50*time.Millisecond, func() error {
		if got := verdicts(getFindings(t, srv.addrs.HTTP)); !slices.Equal(got, want) {
			return fmt.Errorf("findings so far %v", got)
		}
		c, err := js.Consumer(context.Background(), outboxStream, outboxConsumer)
		if err != nil {
			return err
		}
		if ci := c.CachedInfo(); ci.NumPending != 0 || ci.NumAckPending != 0 {
			return fmt.Errorf("outbox: %d pending, %d awaiting ack", ci.NumPending, ci.NumAckPending)
		}
		return nil
	})
	mu.Lock()
	defer mu.Unlock()
	perID := map[string]int{}
	for _, f := range posts {
		perID[f.ID]++
	}
	for b, n := range bodies {
		if n > 1 {
			t.Errorf("posted %d times: %.200s", n, b)
		}
	}
	t.Logf("%d posts for %d findings: %v", len(posts), len(perID), perID)
	if len(perID) == 0 {
		t.Fatal("nothing posted")
	}
	_, metrics := get(t, "http://"+srv.addrs.HTTP+"/metrics", "")
	for _, want := range []string{fmt.Sprintf("faultline_webhook_posts_total %d", len(posts)),
		"faultline_webhook_failures_total 0", "faultline_webhook_outbox_waiting 0"} {
		if !strings.Contains(metrics, want+"\n") {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	// The seed is published in well under the gathering window: its
	// versions are one post (two if the window closes mid-way).
	for id, n := range perID {
		if n > 2 {
			t.Errorf("finding %s posted %d times", id, n)
		}
	}
}
