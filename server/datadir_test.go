package server

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/internal/testutil"
)

// A second serve on the --data-dir of a running one fails on the index's
// lock before it starts anything on that directory: its embedded NATS used
// to come up first on the same JetStream store (two servers writing one
// store), and only then did the index refuse it.
func TestSecondServeOnOneDataDirTouchesNothing(t *testing.T) {
	dir := t.TempDir()
	first := startServer(t, Config{DataDir: dir})

	log := &testutil.Buffer{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := Run(ctx, Config{DataDir: dir, NATSListen: "127.0.0.1:-1", HTTP: "127.0.0.1:0", Stdout: io.Discard,
		Log: slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err == nil || !strings.Contains(err.Error(), "index") {
		t.Fatalf("second serve on one data dir: %v, want the index's refusal", err)
	}
	t.Logf("second serve: %v", err)
	if strings.Contains(log.String(), "embedded nats") {
		t.Errorf("the second serve started its embedded NATS on the first one's store before failing:\n%s", log)
	}
	// The first one is untouched.
	subscribeFindings(t, first.addrs.NATS)
}
