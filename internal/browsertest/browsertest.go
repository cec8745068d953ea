// Package browsertest drives a headless Chromium with chromedp for the
// UI tests (web's, and the commands' that serve it).
package browsertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Chromium finds a Chromium or Chrome binary: $FAULTLINE_CHROMIUM, else
// the first on $PATH; "" when there is none.
func Chromium() string {
	if p := os.Getenv("FAULTLINE_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// NewBrowser starts a headless Chromium (skipping the test without one)
// that ends with the test; its context times out after 90 s.
func NewBrowser(t *testing.T) context.Context {
	t.Helper()
	bin := Chromium()
	if bin == "" {
		t.Skip("no Chromium binary (install Debian's chromium package, or set FAULTLINE_CHROMIUM): browser tests skipped")
	}
	opts := append(slices.Clone(chromedp.DefaultExecAllocatorOptions[:]),
		chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1400, 1100),
		chromedp.Flag("disable-dev-shm-usage", true))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelB := chromedp.NewContext(actx)
	tctx, cancelT := context.WithTimeout(bctx, 90*time.Second)
	t.Cleanup(func() { cancelT(); cancelB(); cancelA() })
	return tctx
}

// WaitJS polls a JavaScript boolean expression until it holds.
func WaitJS(expr string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		var last error
		for {
			ok, err := chromedp.Evaluate[bool](expr)(ctx, t)
			if err != nil {
				last = err
			} else if ok {
				return chromedp.Void{}, nil
			}
			select {
			case <-ctx.Done():
				return chromedp.Void{}, fmt.Errorf("waiting for %s: %w (last error %v)", expr, ctx.Err(), last)
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
}

// Do runs browser actions, failing the test on the first error.
func Do(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatal(err)
	}
}

// Eval returns the value of a JavaScript expression.
func Eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatal(err)
	}
	return v
}
