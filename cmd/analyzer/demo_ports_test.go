package main

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The addresses `serve --demo` takes by default (--http, --nats-listen):
// what the README's first command holds while its second, the tests, runs.
var demoAddrs = []string{"127.0.0.1:8080", "127.0.0.1:4222"}

// holdDemoAddrs listens on the demo's addresses for the rest of the test,
// as a demo in another terminal would. One that is already taken (a demo
// is running) is left to its holder: either way nothing else can bind it.
func holdDemoAddrs(t *testing.T) {
	t.Helper()
	for _, addr := range demoAddrs {
		l, err := net.Listen("tcp", addr)
		if errors.Is(err, syscall.EADDRINUSE) {
			continue
		}
		if err != nil {
			t.Fatalf("listen %s: %v", addr, err)
		}
		t.Cleanup(func() { l.Close() })
	}
}

// TestServeInTestsLeavesTheDemosPortsAlone: every way the tests start serve
// (startServe with the flags that begin like --http, the demo itself)
// serves on ports of its own while the demo's are held. startServe added
// --http 127.0.0.1:0 only when no argument began with --http, so a test
// with --http-token took the default 127.0.0.1:8080 and failed beside a
// running demo (TestServeTokenUIInBrowser, then a 30 s hang).
func TestServeInTestsLeavesTheDemosPortsAlone(t *testing.T) {
	holdDemoAddrs(t)
	tokenFile := filepath.Join(t.TempDir(), "http.token")
	if err := os.WriteFile(tokenFile, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{},
		{"--http-token", "s3cret"},
		{"--http-token=s3cret"},
		{"--http-token-file", tokenFile},
		{"--demo", "--demo-logs", seed + "/failed", "--demo-pace", "1s"},
	} {
		t.Run(strings.Join(append([]string{"serve"}, args...), " "), func(t *testing.T) {
			s := startServe(t, args...)
			for _, addr := range demoAddrs {
				if s.http == addr || strings.HasSuffix(s.nats, "@"+addr) || strings.HasSuffix(s.nats, "/"+addr) {
					t.Errorf("serve %v took the demo's %s (http %s, nats %s)", args, addr, s.http, s.nats)
				}
			}
			if s.http == "" || s.nats == "" {
				t.Errorf("serve %v: http %q, nats %q: not both on ports of their own", args, s.http, s.nats)
			}
		})
	}
}
