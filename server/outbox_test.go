package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
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
	srv := startServer(t, Config{Webhooks: []string{hook.URL}})
	box := newWebhook(hook.URL, 0, slog.New(slog.DiscardHandler))
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
		c, err := js.Consumer(context.Background(), outboxStream, box.durable)
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
	labels := fmt.Sprintf(`{kind="webhook",target=%q}`, box.target)
	for _, want := range []string{fmt.Sprintf("faultline_outbox_posts_total%s %d", labels, len(posts)),
		"faultline_outbox_failures_total" + labels + " 0", "faultline_outbox_waiting" + labels + " 0"} {
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

// TestWebhooksEachTheirOwnOutbox: with two --webhook URLs, each is its own
// durable target. One is down: the other gets the findings at once, the
// down one's wait in its outbox (counted as waiting there) and reach it
// once it is up, each version once; a failing URL holds nothing of the
// other's.
func TestWebhooksEachTheirOwnOutbox(t *testing.T) {
	type hookLog struct {
		mu    sync.Mutex
		posts map[string]int // id/updates/status -> 2xx posts
		fails int
	}
	var down atomic.Bool
	down.Store(true)
	serve := func(l *hookLog, failing *atomic.Bool) *httptest.Server {
		l.posts = map[string]int{}
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var p payload
			b, _ := io.ReadAll(r.Body)
			json.Unmarshal(b, &p)
			l.mu.Lock()
			defer l.mu.Unlock()
			if failing != nil && failing.Load() {
				l.fails++
				http.Error(w, "down", http.StatusServiceUnavailable)
				return
			}
			l.posts[fmt.Sprintf("%s/%d/%s", p.Finding.ID, p.Finding.Updates, p.Finding.Status)]++
		}))
	}
	var upLog, downLog hookLog
	up, dn := serve(&upLog, nil), serve(&downLog, &down)
	defer up.Close()
	defer dn.Close()
	srv := startServer(t, Config{Webhooks: []string{up.URL, dn.URL}, WebhookBackoff: 20 * time.Millisecond})
	nc, err := nats.Connect(srv.addrs.NATS)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	publishRecords(t, js, seedRecords(t), 50)
	posted := func(l *hookLog) map[string]int {
		l.mu.Lock()
		defer l.mu.Unlock()
		return maps.Clone(l.posts)
	}
	testutil.CheckFor(t, 30*time.Second, 50*time.Millisecond, func() error {
		if len(posted(&upLog)) == 0 {
			return fmt.Errorf("nothing posted to the webhook that is up")
		}
		downLog.mu.Lock()
		defer downLog.mu.Unlock()
		if downLog.fails == 0 {
			return fmt.Errorf("no attempt at the webhook that is down")
		}
		return nil
	})
	dnBox := newWebhook(dn.URL, 0, slog.New(slog.DiscardHandler))
	c, err := js.Consumer(t.Context(), outboxStream, dnBox.durable)
	if err != nil {
		t.Fatal(err)
	}
	if ci, err := c.Info(t.Context()); err != nil || ci.NumPending+uint64(ci.NumAckPending) == 0 {
		t.Fatalf("the down webhook's outbox holds nothing: %+v %v", ci, err)
	}
	down.Store(false)
	testutil.CheckFor(t, 30*time.Second, 50*time.Millisecond, func() error {
		if got, want := posted(&downLog), posted(&upLog); !maps.Equal(got, want) {
			return fmt.Errorf("the webhook that came back got %v, the other %v", got, want)
		}
		return nil
	})
	for name, l := range map[string]*hookLog{"up": &upLog, "back": &downLog} {
		for v, n := range posted(l) {
			if n != 1 {
				t.Errorf("%s webhook: %s posted %d times", name, v, n)
			}
		}
	}
}
