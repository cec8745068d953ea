package web

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/faultline/faultline/internal/browsertest"
	"github.com/faultline/faultline/parsers"
)

var tempRoot string

func TestMain(m *testing.M) {
	var err error
	tempRoot, err = os.MkdirTemp("", "faultline-web-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(tempRoot)
	if chromium() == "" && !testing.Verbose() {
		noteSkippedBrowserTests()
	}
	os.Exit(code)
}

// noteSkippedBrowserTests tells the person at the terminal that the browser
// tests were skipped: without -v, go test shows a passing package as "ok"
// only, whatever the tests printed, and a silent skip looks like a pass.
// The controlling terminal is written to directly; without one (CI), .ci/run
// says it instead.
func noteSkippedBrowserTests() {
	tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0)
	if err != nil {
		return
	}
	defer tty.Close()
	fmt.Fprintln(tty, "web: browser tests SKIPPED: no Chromium (install Debian's chromium package, or set FAULTLINE_CHROMIUM)")
}

// chromium finds a Chromium or Chrome binary; the tests skip without one.
func chromium() string { return browsertest.Chromium() }

// artifactsDir is where screenshots go: $FAULTLINE_ARTIFACTS/browser, else
// a directory under the system temp dir that outlives the test (logged).
func artifactsDir(t *testing.T) string {
	dir := os.Getenv("FAULTLINE_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "faultline-artifacts")
	}
	dir = filepath.Join(dir, "browser")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots in %s", dir)
	return dir
}

func newBrowser(t *testing.T) context.Context { return browsertest.NewBrowser(t) }

// waitJS polls a JavaScript boolean expression until it holds.
func waitJS(expr string) chromedp.Action[chromedp.Void] { return browsertest.WaitJS(expr) }

// eval runs JavaScript for its effect.
func eval(expr string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := chromedp.Evaluate[bool](expr)(ctx, t)
		return chromedp.Void{}, err
	}
}

func screenshot(dir, name string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		buf, err := chromedp.FullScreenshot(100)(ctx, t) // quality 100: PNG
		if err != nil {
			return chromedp.Void{}, err
		}
		return chromedp.Void{}, os.WriteFile(filepath.Join(dir, name+".png"), buf, 0o644)
	}
}

func run[T any](t *testing.T, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	return run(t, ctx, chromedp.Text(chromedp.CSS(sel)))
}

const hitNodesJS = `[...new Set([...document.querySelectorAll('#results .hit')].map(h => h.dataset.node))].sort()`

// TestBrowserSeedScenario walks the UI over the seed index the way an SRE
// would: search an IP, see both nodes, filter by a node facet, open a
// finding's evidence in context, and check that hostile log text is shown
// as text.
func TestBrowserSeedScenario(t *testing.T) {
	x := seedIndex(t)
	live := NewHub[*parsers.Event](16)
	ts := newServer(t, Config{Index: x, LiveEvents: live})
	ctx := newBrowser(t)
	art := artifactsDir(t)

	do := func(steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatal(err)
		}
	}
	css := func(s string) chromedp.CSS { return chromedp.CSS(s) }

	// Any script that log text manages to run would call alert; record it.
	trap := `window.__alerts = []; window.alert = (m) => window.__alerts.push(String(m)); true`
	do(
		chromedp.Navigate(ts.URL+"/"),
		eval(trap),
		chromedp.WaitVisible(css(`#findings .finding`)),
		waitJS(`document.querySelectorAll('#timeline .lane').length === 2`),
		waitJS(`document.querySelector('#syntax').textContent.includes('node:192.168.200.12')`),
		screenshot(art, "01-open"),

		chromedp.SetValue(css(`#q`), "192.168.200.12"),
		chromedp.Click(css(`#search-btn`)),
		waitJS(`(() => { const hs = [...document.querySelectorAll('#results .hit')];
			return hs.length > 0 && hs.every(h => h.querySelector('mark') && h.querySelector('.msg').textContent.includes('192.168.200.12')); })()`),
		screenshot(art, "02-search-ip"),
	)
	if nodes := run(t, ctx, chromedp.Evaluate[[]string](hitNodesJS)); !slices.Equal(nodes, []string{"spark-1", "spark-2"}) {
		t.Fatalf("hits of 192.168.200.12 come from %v, want spark-1 and spark-2", nodes)
	}
	if marked := text(t, ctx, `#results .hit mark`); marked != "192.168.200.12" {
		t.Errorf("highlight marks %q, want the IP", marked)
	}
	// The same answer side by side, one column per node.
	do(
		chromedp.Click(css(`#by-node`)),
		waitJS(`[...document.querySelectorAll('#columns .column')].map(c => c.dataset.node).join() === 'spark-1,spark-2'`),
		screenshot(art, "02b-side-by-side"),
		chromedp.Click(css(`#by-node`)),
		waitJS(`!document.querySelector('#results').hidden`),
	)

	// Filter by node with the facet, then remove the filter with its chip.
	do(
		chromedp.Click(css(`#facets button.facet[data-field="node"][data-value="spark-2"]`)),
		waitJS(`(() => { const hs = [...document.querySelectorAll('#results .hit')];
			return hs.length > 0 && hs.every(h => h.dataset.node === 'spark-2'); })()`),
		waitJS(`document.querySelector('#facets button.facet.active[data-value="spark-2"]') !== null`),
		screenshot(art, "03-facet-spark-2"),
		chromedp.Click(css(`#active-filters .chip`)),
		waitJS(`document.querySelectorAll('#active-filters .chip').length === 0 && new Set([...document.querySelectorAll('#results .hit')].map(h => h.dataset.node)).size === 2`),
	)

	// Open the first finding and follow an evidence link to its context.
	do(chromedp.WaitVisible(css(`#findings details.finding[open] .evidence-link`)))
	title := text(t, ctx, `#findings details.finding summary`)
	evID := run(t, ctx, chromedp.Evaluate[string](`document.querySelector('#findings .evidence-link').dataset.id`))
	evText := text(t, ctx, `#findings .evidence-link`)
	do(
		chromedp.Click(css(`#findings .evidence-link`)),
		chromedp.WaitVisible(css(`#context .ctx-line.focus`)),
		screenshot(art, "04-finding-evidence-context"),
	)
	focusID := run(t, ctx, chromedp.Evaluate[string](`document.querySelector('#context .ctx-line.focus').dataset.id`))
	focusText := strings.TrimSpace(text(t, ctx, `#context .ctx-line.focus .msg`))
	do(chromedp.Click(css(`#context-close`)), chromedp.WaitNotVisible(css(`#context`)))
	if !strings.Contains(title, "node:192.168.200.12") {
		t.Errorf("first finding %q, want the seed's node IP mismatch", title)
	}
	if evID == "" || focusID != evID {
		t.Errorf("evidence link %q opened context focused on %q", evID, focusID)
	}
	if ev := x.Findings()[0].Evidence[0]; !strings.Contains(focusText, ev.Text) || !strings.Contains(evText, ev.Text) {
		t.Errorf("context line %q / link %q do not hold the evidence text %q", focusText, evText, ev.Text)
	}

	// Hostile log text is rendered as text, in results and in context.
	do(
		chromedp.SetValue(css(`#q`), "alert"),
		chromedp.Click(css(`#search-btn`)),
		waitJS(`[...document.querySelectorAll('#results .hit .msg')].some(m => m.textContent.includes('<script>alert(1)</script>'))`),
		chromedp.Click(css(`#results .hit`)),
		chromedp.WaitVisible(css(`#context .ctx-line.focus`)),
		screenshot(art, "05-script-injection-as-text"),
	)
	msgs := run(t, ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#results .hit .msg, #context .msg')].map(m => m.textContent)`))
	injected := run(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll('#results script, #results img, #results b, #context script, #context img, #context b').length`))
	alerts := run(t, ctx, chromedp.Evaluate[[]string](`window.__alerts`))
	joined := strings.Join(msgs, "\n")
	for _, want := range []string{"<script>alert(1)</script>", "<img src=x onerror=alert(2)>", `"<b>bold</b>"`} {
		if !strings.Contains(joined, want) {
			t.Errorf("page does not show %q as text: %q", want, msgs)
		}
	}
	if injected != 0 || len(alerts) != 0 {
		t.Errorf("log text became markup: %d injected elements, alerts %v", injected, alerts)
	}

	// Live mode follows new events (also escaped).
	do(chromedp.Click(css(`#context-close`)), chromedp.Click(css(`#live`)))
	for deadline := time.Now().Add(10 * time.Second); live.Subscribers() == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("live mode did not subscribe to the stream")
		}
	}
	live.Publish(&parsers.Event{Record: parsers.Record{ID: "live-1", Node: "spark-2", File: "x.log", Line: 1},
		Time: time.Now(), Source: parsers.SourceVLLM, Level: parsers.LevelError, Message: `live <img src=x onerror="alert('live')">`})
	do(
		waitJS(`[...document.querySelectorAll('#live-list .hit .msg')].some(m => m.textContent === 'live <img src=x onerror="alert(\'live\')">')`),
		screenshot(art, "06-live"),
	)
	if n := run(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll('#live-list img').length + window.__alerts.length`)); n != 0 {
		t.Errorf("live event became markup (%d)", n)
	}
}
