package server

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"
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
