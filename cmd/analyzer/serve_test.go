package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/internal/testutil"
)

// The README's first command: `analyzer serve --demo` replays the seed through
// the embedded NATS and two in-process shippers, and the IP-mismatch finding
// appears on the terminal with its fix.
func TestServeDemo(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errs testutil.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--demo", "--demo-logs", seed + "/failed", "--demo-pace", "1s",
			"--nats-listen", "127.0.0.1:-1", "--http", "127.0.0.1:0"}, nil, &out, &errs)
	}()
	testutil.CheckFor(t, 60*time.Second, 100*time.Millisecond, func() error {
		select {
		case code := <-done:
			t.Fatalf("serve --demo exited with %d early:\n%s\n%s", code, out.String(), errs.String())
		default:
		}
		s := out.String()
		for _, want := range []string{"[CRITICAL] ray-node-ip-mismatch", "192.168.200.12", "10.1.230.180", "VLLM_HOST_IP="} {
			if !strings.Contains(s, want) {
				return errMissing(want)
			}
		}
		return nil
	})
	cancel()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("serve --demo did not stop on cancel")
	}
}

type errMissing string

func (e errMissing) Error() string { return "output lacks " + string(e) }
