package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/faultline/faultline/internal/testutil"
)

// serving is an `analyzer serve` run in-process by startServe.
type serving struct {
	out, errs *testutil.Buffer
	nats      string // client URL of the embedded NATS
	http      string // host:port
	done      chan int
}

// startServe runs `analyzer serve args...` with an embedded NATS and HTTP on
// free ports and waits until it serves; it is stopped when the test ends.
func startServe(t *testing.T, args ...string) *serving {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &serving{out: &testutil.Buffer{}, errs: &testutil.Buffer{}, done: make(chan int, 1)}
	args = append([]string{"serve", "--data-dir", t.TempDir(), "--nats-listen", "127.0.0.1:-1"}, args...)
	// Only --http itself names the address (--http-token does not: a prefix
	// match left serve on the default 127.0.0.1:8080, which a running demo holds).
	if !slices.ContainsFunc(args, func(a string) bool { return a == "--http" || strings.HasPrefix(a, "--http=") }) {
		args = append(args, "--http", "127.0.0.1:0")
	}
	go func() { s.done <- run(ctx, args, nil, s.out, s.errs) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-s.done:
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop on cancel")
		}
	})
	natsRE := regexp.MustCompile(`msg="embedded nats" url=(\S+)`)
	httpRE := regexp.MustCompile(`msg=http addr=(\S+)`)
	testutil.CheckFor(t, 30*time.Second, 20*time.Millisecond, func() error {
		select {
		case code := <-s.done:
			s.done <- code // for the cleanup, which would wait 30 s for it
			t.Fatalf("serve exited with %d:\n%s", code, s.errs.String())
		default:
		}
		log := s.errs.String()
		if !strings.Contains(log, `msg=serving`) {
			return fmt.Errorf("not serving yet")
		}
		if m := natsRE.FindStringSubmatch(log); m != nil {
			s.nats = m[1]
		}
		if m := httpRE.FindStringSubmatch(log); m != nil {
			s.http = m[1]
		}
		return nil
	})
	return s
}

// TestServeSIGHUPReloadsRules: SIGHUP used to end serve (exit 129) without
// a word; now it reloads the rules, says so, and serve keeps serving.
func TestServeSIGHUPReloadsRules(t *testing.T) {
	s := startServe(t, "--rules", t.TempDir())
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	testutil.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		if !regexp.MustCompile(`msg="rules reloaded" rules=\d+ why=signal`).MatchString(s.errs.String()) {
			return fmt.Errorf("no reload logged yet:\n%s", s.errs.String())
		}
		return nil
	})
	select {
	case code := <-s.done:
		t.Fatalf("serve exited with %d on SIGHUP", code)
	default:
	}
	resp, err := http.Get("http://" + s.http + "/healthz")
	if err != nil {
		t.Fatalf("after SIGHUP: %v", err)
	}
	resp.Body.Close()
}

// TestServeSecretsFromEnvAndFile: the NATS token comes from $FAULTLINE_TOKEN
// or --token-file, the HTTP token from $FAULTLINE_HTTP_TOKEN, so neither
// needs to be on the command line; the Bearer scheme is case-insensitive.
func TestServeSecretsFromEnvAndFile(t *testing.T) {
	t.Setenv("FAULTLINE_TOKEN", "nats-from-env")
	t.Setenv("FAULTLINE_HTTP_TOKEN", "http-from-env")
	s := startServe(t)
	wantNATSToken(t, s.nats, "nats-from-env")

	for _, tt := range []struct {
		auth string
		code int
	}{
		{"", http.StatusUnauthorized},
		{"Bearer wrong", http.StatusUnauthorized},
		{"Bearer http-from-env", http.StatusOK},
		{"bearer http-from-env", http.StatusOK},
		{"BEARER  http-from-env", http.StatusOK},
	} {
		wantStatus(t, "http://"+s.http+"/api/findings", tt.auth, tt.code)
	}

	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte("nats-from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s = startServe(t, "--token-file", file)
	wantNATSToken(t, s.nats, "nats-from-file")
}

// wantNATSToken checks that the NATS server at url wants exactly token.
func wantNATSToken(t *testing.T, url, token string) {
	t.Helper()
	if nc, err := nats.Connect(url); err == nil {
		nc.Close()
		t.Errorf("NATS %s accepted a client without a token", url)
	}
	nc, err := nats.Connect(url, nats.Token(token))
	if err != nil {
		t.Fatalf("NATS %s with token %q: %v", url, token, err)
	}
	nc.Close()
}

// TestServeWarnsOnOpenHTTP: --http on all interfaces without a token warns,
// as the NATS listener does; with a token it does not.
func TestServeWarnsOnOpenHTTP(t *testing.T) {
	const warning = "HTTP listens beyond this host without a token"
	s := startServe(t, "--http", "0.0.0.0:0")
	if !strings.Contains(s.errs.String(), warning) {
		t.Errorf("serve --http 0.0.0.0:0 without a token does not warn:\n%s", s.errs.String())
	}
	t.Setenv("FAULTLINE_HTTP_TOKEN", "set")
	s = startServe(t, "--http", "0.0.0.0:0")
	if strings.Contains(s.errs.String(), warning) {
		t.Errorf("serve warns although a token is set:\n%s", s.errs.String())
	}
}

// TestServeDemoExplainsItself: `serve --demo` run from any directory (the
// seed is embedded, as the FROM scratch image needs) says where the UI is,
// prints each finding once with later changes as short lines, and says when
// the replay is done. FAULTLINE_TOKEN set: the demo's own shippers use it.
func TestServeDemoExplainsItself(t *testing.T) {
	t.Chdir(t.TempDir())
	t.Setenv("FAULTLINE_TOKEN", "demo-token")
	s := startServe(t, "--demo", "--demo-pace", "1s")
	testutil.CheckFor(t, 60*time.Second, 50*time.Millisecond, func() error {
		if !strings.Contains(s.out.String(), "replay done") {
			return fmt.Errorf("no end of the replay announced yet:\n%s\n%s", s.out.String(), s.errs.String())
		}
		return nil
	})
	out := s.out.String()
	intro := regexp.MustCompile(`(?m)^Faultline demo: replaying the logs of spark-1, spark-2 .*web UI on http://` + regexp.QuoteMeta(s.http) + `/`)
	if !intro.MatchString(out) {
		t.Errorf("no first line saying what the demo does and where the UI is:\n%s", out)
	}
	if n := strings.Count(out, "[CRITICAL] ray-node-ip-mismatch"); n != 1 {
		t.Errorf("the finding is printed %d times in full, want once:\n%s", n, out)
	}
	if !regexp.MustCompile(`(?m)^Faultline demo: replay done: \d+ lines from 2 nodes, [1-9]\d* finding\(s\); they stay on http://`).MatchString(out) {
		t.Errorf("the end of the replay is not announced with its counts:\n%s", out)
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "↻") && len(l) > 200 {
			t.Errorf("an update is not one short line: %q", l)
		}
	}
}

// TestSearchServer: while serve holds its index, search --server asks its
// HTTP API instead (with the token from $FAULTLINE_HTTP_TOKEN): same hits,
// same -C context, same exit status as a local search.
func TestSearchServer(t *testing.T) {
	t.Setenv("FAULTLINE_HTTP_TOKEN", "search-token")
	dataDir := t.TempDir()
	s := startServe(t, "--demo", "--demo-pace", "300ms", "--data-dir", dataDir)
	testutil.CheckFor(t, 60*time.Second, 50*time.Millisecond, func() error {
		if !strings.Contains(s.out.String(), "replay done") {
			return fmt.Errorf("demo replay not done yet")
		}
		return nil
	})
	server := "http://" + s.http

	out, errs, code := runCmd(t, "search", "--server", server, "--json", "-n", "100", "192.168.200.12")
	if code != 0 {
		t.Fatalf("search --server: exit %d: %s", code, errs)
	}
	nodes := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var h struct{ Node, Message string }
		if err := json.Unmarshal([]byte(l), &h); err != nil || !strings.Contains(h.Message, "192.168.200.12") {
			t.Fatalf("hit %q: %v", l, err)
		}
		nodes[h.Node] = true
	}
	if !nodes["spark-1"] || !nodes["spark-2"] {
		t.Errorf("hits from %v, want both nodes", nodes)
	}
	out, _, code = runCmd(t, "search", "--server", server, "-n", "1", "-C", "2", "--level", "error", "Cannot provide a placement group")
	if code != 0 || strings.Count(out, "\n") < 3 {
		t.Errorf("search --server -C 2: exit %d, %q", code, out)
	}
	if _, _, code := runCmd(t, "search", "--server", server, "no-such-word-anywhere"); code != 1 {
		t.Errorf("search --server without a match: exit %d, want 1", code)
	}
	t.Setenv("FAULTLINE_HTTP_TOKEN", "")
	if _, errs, code := runCmd(t, "search", "--server", server, "x"); code != 2 || !strings.Contains(errs, "FAULTLINE_HTTP_TOKEN") {
		t.Errorf("search --server without the token: exit %d, %q; want 2 and a hint", code, errs)
	}
	// The local way fails on serve's lock, and says what to do instead.
	if _, errs, code := runCmd(t, "search", "--data-dir", dataDir, "x"); code != 2 || !strings.Contains(errs, "--server") {
		t.Errorf("local search of serve's index: exit %d, %q; want 2 and the --server hint", code, errs)
	}
}
