// Package testutil holds helpers shared by the tests of several packages:
// a polling assertion and a real, in-process NATS server with JetStream.
// Tests use real parts (a real server on a random port, a real store on
// disk), never mocks, and poll for conditions instead of sleeping.
package testutil

import (
	"bytes"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// CheckFor calls f every `every` until it returns nil or `total` has passed;
// then it fails the test with f's last error. It is nats-server's checkFor:
// use it wherever a test would otherwise sleep and hope.
func CheckFor(t testing.TB, total, every time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(total)
	var err error
	for {
		if err = f(); err == nil {
			return
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(every)
	}
	t.Fatalf("CheckFor: still failing after %v: %v", total, err)
}

// RunJetStreamServer starts a nats-server with JetStream on a random port
// (Port -1) and a store in t.TempDir(), and shuts it down when the test ends.
// Its URL is s.ClientURL().
func RunJetStreamServer(t testing.TB) *server.Server {
	t.Helper()
	return RunJetStreamServerWith(t, &server.Options{Port: -1, StoreDir: t.TempDir()})
}

// RunJetStreamServerWith starts a server with the given options (JetStream is
// forced on; Host defaults to 127.0.0.1). Use it to restart a server on the
// same Port and StoreDir, or to add authentication or TLS. The server is shut
// down when the test ends (shutting it down earlier is fine).
func RunJetStreamServerWith(t testing.TB, opts *server.Options) *server.Server {
	t.Helper()
	o := *opts
	o.JetStream = true
	o.NoSigs = true
	o.NoLog = true
	if o.Host == "" {
		o.Host = "127.0.0.1"
	}
	if o.StoreDir == "" {
		o.StoreDir = t.TempDir()
	}
	s, err := server.NewServer(&o)
	if err != nil {
		t.Fatalf("nats-server: %v", err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		s.Shutdown()
		t.Fatalf("nats-server: not ready after 10s")
	}
	t.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	return s
}

// Buffer is a bytes.Buffer that a logger or a process and a test can share.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
