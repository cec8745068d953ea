package server

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/internal/testutil"
	"github.com/faultline/faultline/transport"
)

// TestNATSPortInUse: a taken NATS port fails serve at once with the
// system's "address already in use" (it waited 10 s, then said "not ready").
func TestNATSPortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	start := time.Now()
	err = Run(context.Background(), Config{DataDir: t.TempDir(), NATSListen: ln.Addr().String(), Log: slog.New(slog.DiscardHandler)})
	took := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), "address already in use") || !strings.Contains(err.Error(), ln.Addr().String()) {
		t.Fatalf("Run on a taken NATS port: %v, want the address and \"address already in use\"", err)
	}
	if took > 3*time.Second {
		t.Errorf("failing took %v, want it at once", took)
	}
}

// TestExternalNATSUnreachable: serve --nats URL that cannot be reached says
// which URL and why while it retries, and HTTP is up meanwhile, /healthz
// reporting NATS as the trouble (HTTP waited for NATS before).
func TestExternalNATSUnreachable(t *testing.T) {
	dead := freePort(t) // nothing listens there once freePort returns
	httpAddr := freePort(t)
	var log testutil.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Config{DataDir: t.TempDir(), NATS: transport.NATSOptions{URL: "nats://" + dead}, HTTP: httpAddr,
			Log: slog.New(slog.NewTextHandler(&log, nil))})
	}()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop on cancel")
		}
	}()
	testutil.CheckFor(t, 30*time.Second, 50*time.Millisecond, func() error {
		resp, err := http.Get("http://" + httpAddr + "/healthz")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		var h map[string]any
		json.NewDecoder(resp.Body).Decode(&h)
		if resp.StatusCode != http.StatusServiceUnavailable || h["status"] != "nats disconnected" {
			return fmt.Errorf("/healthz: %d %v", resp.StatusCode, h)
		}
		return nil
	})
	testutil.CheckFor(t, 30*time.Second, 50*time.Millisecond, func() error {
		l := log.String()
		if !strings.Contains(l, "nats://"+dead) || !strings.Contains(l, "connection refused") {
			return fmt.Errorf("the log names neither the URL nor the error yet:\n%s", l)
		}
		return nil
	})
}

func TestRedactURLs(t *testing.T) {
	got := redactURLs("nats://u:pw@a:4222, nats://tok@b:4222,nats://c:4222")
	if strings.Contains(got, "pw") || strings.Contains(got, "tok") || !strings.Contains(got, "c:4222") {
		t.Errorf("redactURLs: %q", got)
	}
}
