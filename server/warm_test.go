package server

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/faultline/faultline/internal/testutil"
)

// While serve replays the stream into the rules after a restart (159 s for
// 12M records), /healthz already answers, with status "warming" and how far
// the replay got; then "ok".
func TestHealthzSaysWarming(t *testing.T) {
	release, ready := make(chan struct{}), make(chan Addrs, 1)
	httpAddr := freePort(t)
	cfg := Config{DataDir: t.TempDir(), NATSListen: "127.0.0.1:-1", HTTP: httpAddr,
		Log: slog.New(slog.NewTextHandler(testWriter{t}, nil)), Stdout: &testutil.Buffer{},
		beforeWarmUp: func() { <-release }, Ready: func(a Addrs) { ready <- a }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	health := func() (int, map[string]any, error) {
		resp, err := http.Get("http://" + httpAddr + "/healthz")
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		var body map[string]any
		err = json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, body, err
	}
	start := time.Now()
	testutil.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		code, body, err := health()
		if err != nil {
			return err
		}
		if code != http.StatusOK || body["status"] != "warming" || body["warm_up"] == nil {
			return fmt.Errorf("/healthz %d %v during the warm-up", code, body)
		}
		return nil
	})
	t.Logf("/healthz said warming %v after start", time.Since(start))
	close(release)
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		t.Fatal("not ready 30s after the warm-up")
	}
	testutil.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		code, body, err := health()
		if err != nil {
			return err
		}
		if code != http.StatusOK || body["status"] != "ok" {
			return fmt.Errorf("/healthz %d %v after the warm-up", code, body)
		}
		return nil
	})
}
