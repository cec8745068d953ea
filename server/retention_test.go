package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/faultline/faultline/internal/testutil"
	"github.com/faultline/faultline/transport"
)

// TestRetentionUnderTheDuplicateWindow (issue 22 item 4): a retention
// shorter than the default 10-minute duplicate window works, alone and on
// a cluster (where it is applied to an existing stream): the window is
// fitted to it. Before, JetStream refused the stream every second forever
// and serve never became ready. A retention no stream can have is an
// error at once.
func TestRetentionUnderTheDuplicateWindow(t *testing.T) {
	readyz := func(r *running) error {
		resp, err := http.Get("http://" + r.addrs.HTTP + "/readyz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/readyz %s", resp.Status)
		}
		return nil
	}
	limits := func(t *testing.T, url string, age time.Duration) {
		t.Helper()
		nc := connectRetrying(t, url)
		js, _ := jetstream.New(nc)
		testutil.CheckFor(t, 20*time.Second, 100*time.Millisecond, func() error {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			st, err := js.Stream(ctx, transport.StreamName)
			if err != nil {
				return err
			}
			if c := st.CachedInfo().Config; c.MaxAge != age || c.Duplicates != age {
				return fmt.Errorf("max age %v, duplicates %v; want both %v", c.MaxAge, c.Duplicates, age)
			}
			return nil
		})
	}
	t.Run("single", func(t *testing.T) {
		r := startServer(t, Config{Stream: transport.StreamOptions{MaxAge: 3 * time.Minute}})
		testutil.CheckFor(t, 20*time.Second, 100*time.Millisecond, func() error { return readyz(r) })
		limits(t, r.addrs.NATS, 3*time.Minute)
	})
	t.Run("cluster", func(t *testing.T) {
		srv := testutil.RunJetStreamServer(t)
		cfg := Config{NATS: transport.NATSOptions{URL: srv.ClientURL()},
			Cluster: ClusterConfig{Partitions: 2, Member: "a", LeaseTTL: 2 * time.Second}}
		first := startServer(t, cfg) // the stream, with the default limits
		testutil.CheckFor(t, 20*time.Second, 100*time.Millisecond, func() error { return readyz(first) })
		first.stop()
		cfg.Stream.MaxAge = 2 * time.Minute
		r := startServer(t, cfg)
		testutil.CheckFor(t, 20*time.Second, 100*time.Millisecond, func() error { return readyz(r) })
		limits(t, srv.ClientURL(), 2*time.Minute)
	})
	t.Run("impossible", func(t *testing.T) {
		err := Run(context.Background(), Config{DataDir: t.TempDir(), Stream: transport.StreamOptions{MaxAge: 500 * time.Millisecond}})
		if err == nil || !strings.Contains(err.Error(), "retention age 500ms") {
			t.Errorf("Run with a 500 ms retention: %v", err)
		}
	})
}
