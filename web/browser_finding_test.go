package web

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/faultline/faultline/finding"
)

// -screenshots writes the README's screenshots (docs/img) from
// TestBrowserFindingAsDrawn: go test ./web -run TestBrowserFindingAsDrawn -screenshots
var updateScreenshots = flag.Bool("screenshots", false, "write docs/img/ui-*.png")

// viewShot saves what the window shows (not the whole page): what a
// person sees first at that size.
func viewShot(t *testing.T, dir, name string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		buf, err := chromedp.CaptureScreenshot()(ctx, tg)
		if err != nil {
			return chromedp.Void{}, err
		}
		if err := os.WriteFile(filepath.Join(dir, name+".png"), buf, 0o644); err != nil {
			return chromedp.Void{}, err
		}
		if *updateScreenshots {
			docs := filepath.Join(repoRoot(t), "docs", "img")
			if err := os.MkdirAll(docs, 0o755); err != nil {
				return chromedp.Void{}, err
			}
			return chromedp.Void{}, os.WriteFile(filepath.Join(docs, name+".png"), buf, 0o644)
		}
		return chromedp.Void{}, nil
	}
}

// TestBrowserFindingAsDrawn: the seed's finding reads as an engineer would
// draw it: what failed, then the fix, then the per-node table (each node's
// registered address and the --node-ip-address it was started with, the
// request and the GPU total that no one node owns), the launch timeline
// per node with the failure marked, then the evidence shortened (8 of 14)
// with a button that shows all. At 1400×900 and 390×844 nothing scrolls
// sideways and the fix is on the first screen.
func TestBrowserFindingAsDrawn(t *testing.T) {
	x := seedIndex(t)
	ts := newServer(t, Config{Index: x})
	ctx := newBrowser(t)
	art := artifactsDir(t)
	do := func(steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatal(err)
		}
	}
	do(
		chromedp.EmulateViewport(1400, 900),
		chromedp.Navigate(ts.URL+"/"),
		waitJS(`document.querySelector('#findings details.finding[open] .node-table') !== null && document.querySelectorAll('#results .hit').length > 0`),
		viewShot(t, art, "ui-finding-1400"),
		screenshot(art, "ui-finding-1400-full"),
	)
	card := `document.querySelector('#findings details.finding[open]')`
	order := run(t, ctx, chromedp.Evaluate[[]string](`[...`+card+`.querySelectorAll('.summary, .fix, .node-table, .finding-timeline, ol.evidence, .ruled-out')].map(e => e.className.split(' ')[0] || e.tagName)`))
	if want := []string{"summary", "fix", "node-table", "finding-timeline", "evidence", "ruled-out"}; !slices.Equal(order, want) {
		t.Errorf("the finding reads %v, want %v", order, want)
	}
	rows := run(t, ctx, chromedp.Evaluate[[]string](`[...`+card+`.querySelectorAll('.node-table tbody tr')].map(r => [...r.children].map(c => c.textContent.trim()).join(' | '))`))
	head := run(t, ctx, chromedp.Evaluate[string](`[...`+card+`.querySelectorAll('.node-table thead th')].map(c => c.textContent).join(' | ')`))
	if head != "node | requested node | registered ip | gpu total | tried node ip" {
		t.Errorf("table head %q", head)
	}
	for i, want := range []string{
		"spark-1 | — | 10.1.230.180 | — | 192.168.200.12",
		"spark-2 | — | 10.1.230.181 | — | 192.168.200.13",
		"(cluster) | 192.168.200.12 (logs of spark-1) | — | 2 (logs of spark-1) | —",
	} {
		if i >= len(rows) || rows[i] != want {
			t.Errorf("table rows %q, want row %d %q", rows, i, want)
		}
	}
	// The table's values open the record that stated them.
	do(
		chromedp.Click(chromedp.CSS(`#findings details.finding[open] .node-table td[data-fact="registered_ip"] .fact-value`)),
		waitJS(`!document.querySelector('#context').hidden && document.querySelector('#context .ctx-line.focus .msg').textContent.includes('10.1.230.180')`),
		chromedp.Click(chromedp.CSS(`#context-close`)),
	)
	// The launch timeline: a lane per node, the failure marked where the
	// autoscaler said no node fits.
	lanes := run(t, ctx, chromedp.Evaluate[[]string](`[...`+card+`.querySelectorAll('.ft-lane')].map(l => l.dataset.node + ':' + l.querySelectorAll('.ft-dot').length)`))
	if !slices.Equal(lanes, []string{"spark-1:11", "spark-2:3"}) {
		t.Errorf("timeline lanes %v, want spark-1 with 11 evidence dots (its GCS registers spark-2 too), spark-2 with 3", lanes)
	}
	if fail := run(t, ctx, chromedp.Evaluate[string](card+`.querySelector('.ft-failure').textContent`)); fail != "✗ failed 22:41:47.932" {
		t.Errorf("failure mark %q", fail)
	}
	if n := run(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll('#timeline .lane[data-node="spark-1"] .lane-failure').length`)); n != 1 {
		t.Errorf("the page's timeline marks the failure %d times on spark-1, want once", n)
	}
	// Evidence: 8 of 14, the failure line marked, all of it a click away.
	ev := func() (int, string) {
		return run(t, ctx, chromedp.Evaluate[int](card+`.querySelectorAll('ol.evidence li').length`)),
			run(t, ctx, chromedp.Evaluate[string](card+`.querySelector('ol.evidence li.failure .evidence-link').textContent`))
	}
	if n, failed := ev(); n != 8 || !strings.Contains(failed, "No available node types can fulfill resource request") {
		t.Errorf("evidence shows %d lines, failure %q; want 8 with the autoscaler's line marked", n, failed)
	}
	do(chromedp.Click(chromedp.CSS(`#findings details.finding[open] .show-all`)))
	if n, _ := ev(); n != 14 {
		t.Errorf("show all: %d lines, want 14", n)
	}

	brokenWords(t, ctx, "1400")
	wide := `document.documentElement.scrollWidth > document.documentElement.clientWidth`
	fixTop := `document.querySelector('#findings details.finding[open] .fix').getBoundingClientRect().top`
	if run(t, ctx, chromedp.Evaluate[bool](wide)) {
		t.Errorf("the page scrolls sideways at 1400 px")
	}
	if top := run(t, ctx, chromedp.Evaluate[float64](fixTop)); top > 600 {
		t.Errorf("the fix starts %v px down at 1400×900: not on the first screen", top)
	}
	do(
		chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile),
		chromedp.Navigate(ts.URL+"/"),
		waitJS(`document.querySelector('#findings details.finding[open] .node-table') !== null && document.querySelectorAll('#results .hit').length > 0`),
		viewShot(t, art, "ui-finding-390"),
		screenshot(art, "ui-finding-390-full"),
	)
	if run(t, ctx, chromedp.Evaluate[bool](wide)) {
		w := run(t, ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`))
		t.Errorf("the page scrolls sideways at 390 px: %d px wide", w)
	}
	brokenWords(t, ctx, "390")
	if top := run(t, ctx, chromedp.Evaluate[float64](fixTop)); top > 844 {
		t.Errorf("the fix starts %v px down at 390×844: not on the first screen", top)
	}
}

// brokenWords: no word with a hyphen (a flag, a node name) of the open
// finding's summary and fix is broken over two lines: --node-ip-address
// read "-" / "-node-ip-address" on a phone, spark-2 "spark-" / "2)" at
// 1400 px. Words over 40 characters may break (a phone has to).
func brokenWords(t *testing.T, ctx context.Context, size string) {
	t.Helper()
	broken := run(t, ctx, chromedp.Evaluate[[]string](`(() => {
		const out = [];
		for (const root of document.querySelectorAll('#findings details.finding[open] :is(.summary, .fix)')) {
			const walk = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
			for (let n; (n = walk.nextNode()); ) {
				for (const m of n.data.matchAll(/\S*(?:\w-|-\w)\S*/g)) {
					if (m[0].length > 40) continue;
					const r = document.createRange();
					r.setStart(n, m.index);
					r.setEnd(n, m.index + m[0].length);
					if (new Set([...r.getClientRects()].map((b) => Math.round(b.top))).size > 1) out.push(m[0]);
				}
			}
		}
		return out;
	})()`))
	if len(broken) > 0 {
		t.Errorf("at %s px the finding breaks %d words with a hyphen over two lines: %q", size, len(broken), broken)
	}
	// Where each evidence line is and what it proves is not broken inside
	// a word: "tri" / "ed node ip", "raylet.out:1" / "7" on a phone.
	broken = run(t, ctx, chromedp.Evaluate[[]string](`(() => {
		const out = [];
		const oneLine = (n, at, word) => {
			const r = document.createRange();
			r.setStart(n, at);
			r.setEnd(n, at + word.length);
			if (new Set([...r.getClientRects()].map((b) => Math.round(b.top))).size > 1) out.push(word);
		};
		for (const root of document.querySelectorAll('#findings details.finding[open] ol.evidence .ev-where')) {
			const walk = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
			for (let n; (n = walk.nextNode()); ) {
				for (const m of n.data.matchAll(/[^\/\s·]+:\d+/g)) oneLine(n, m.index, m[0]);
				for (const m of n.data.matchAll(/ · [^·]+/g)) {
					for (const w of m[0].matchAll(/[^\s·]+/g)) oneLine(n, m.index + w.index, w[0]);
				}
			}
		}
		return out;
	})()`))
	if len(broken) > 0 {
		t.Errorf("at %s px the evidence breaks %d of its files' names or what its lines prove: %q", size, len(broken), broken)
	}
}

// TestBrowserFindingsUpdateWithoutLive: a finding proven while the page is
// open shows up in the findings panel on its own; "Live lines" is not
// ticked (the panel reloaded only inside the Live toggle: a second tab said
// "Findings (none)" a minute after the finding).
func TestBrowserFindingsUpdateWithoutLive(t *testing.T) {
	x := seedIndex(t)
	var mu sync.Mutex
	var current []finding.Finding
	hub := NewHub[finding.Finding](16)
	ts := newServer(t, Config{Index: x, LiveFindings: hub, Findings: func() []finding.Finding {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(current)
	}})
	ctx := newBrowser(t)
	art := artifactsDir(t)
	do := func(steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatal(err)
		}
	}
	do(
		chromedp.Navigate(ts.URL+"/"),
		waitJS(`document.querySelector('#findings-count').textContent === '(none)'`),
	)
	for deadline := time.Now().Add(10 * time.Second); hub.Subscribers() == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the page does not follow findings without Live ticked")
		}
	}
	if run(t, ctx, chromedp.Evaluate[bool](`document.querySelector('#live').checked`)) {
		t.Fatal("Live is ticked")
	}
	f := x.Findings()[0]
	f.Revision = 1
	mu.Lock()
	current = []finding.Finding{f}
	mu.Unlock()
	hub.Publish(f)
	do(
		waitJS(`document.querySelector('#findings-count').textContent === '(1)' && document.querySelector('#findings details.finding[data-id="`+f.ID+`"] .fix') !== null`),
		screenshot(art, "20-finding-arrives"),
	)
	// A new version of it replaces it in place, the card left open.
	f.Revision, f.Status = 2, finding.Resolved
	mu.Lock()
	current = []finding.Finding{f}
	mu.Unlock()
	hub.Publish(f)
	do(waitJS(`document.querySelectorAll('#findings details.finding').length === 1 && document.querySelector('#findings details.finding.resolved[open]') !== null`))
}

// TestBrowserRecords: the hit list as a log viewer shows it: a multi-line
// record collapsed to its first line (and the lines that match), expanded
// on click; the time on one line at 1400 px; a malformed query says where;
// a LogQL query gets its equivalent; an empty result says so instead of a
// bare axis; the histogram's axis follows the hits.
func TestBrowserRecords(t *testing.T) {
	x := seedIndex(t)
	ts := newServer(t, Config{Index: x})
	ctx := newBrowser(t)
	art := artifactsDir(t)
	do := func(steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatal(err)
		}
	}
	searchFor := func(q string) {
		t.Helper()
		do(
			eval(`document.querySelector('#status').textContent = ''; true`),
			chromedp.SetValue(chromedp.CSS(`#q`), q),
			chromedp.Click(chromedp.CSS(`#search-btn`)),
			waitJS(`document.querySelector('#status').textContent !== '' && document.querySelector('#status').textContent !== 'Searching…'`),
		)
	}
	do(chromedp.EmulateViewport(1400, 900), chromedp.Navigate(ts.URL+"/"), waitJS(`document.querySelectorAll('#results .hit').length > 0`))

	// The time column never wraps.
	wrapped := run(t, ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#results .hit .time')]
		.filter(e => { const r = document.createRange(); r.selectNodeContents(e); return r.getClientRects().length !== 1 || e.scrollWidth > e.clientWidth + 1; })
		.map(e => e.textContent)`))
	if len(wrapped) > 0 {
		do(screenshot(art, "30-time-wraps"))
		t.Errorf("%d times wrap or are cut at 1400 px, first %q", len(wrapped), wrapped[0])
	}
	// Each to the millisecond, three digits (22:43:47.96 stood shorter
	// than its neighbours).
	timeRE := regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}$`)
	for _, tm := range run(t, ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#results .hit .time')].map(e => e.textContent)`)) {
		if !timeRE.MatchString(tm) {
			t.Errorf("hit time %q, want YYYY-MM-DD HH:MM:SS.mmm", tm)
			break
		}
	}

	// A traceback is one line until expanded.
	searchFor("Traceback")
	do(waitJS(`document.querySelector('#results .hit .record.collapsed') !== null`), screenshot(art, "31-collapsed"))
	rec := `document.querySelector('#results .hit .record')`
	visible := func() int {
		return run(t, ctx, chromedp.Evaluate[int](`[...`+rec+`.querySelectorAll('.ln')].filter(l => l.offsetParent !== null).length`))
	}
	total := run(t, ctx, chromedp.Evaluate[int](rec+`.querySelectorAll('.ln').length`))
	if v := visible(); total < 5 || v > 2 {
		t.Errorf("a %d-line traceback shows %d lines collapsed, want its first and the matching one", total, v)
	}
	do(chromedp.Click(chromedp.CSS(`#results .hit .record .expand`)), screenshot(art, "32-expanded"))
	if v := visible(); v != total {
		t.Errorf("expanded, %d of %d lines show", v, total)
	}
	if run(t, ctx, chromedp.Evaluate[bool](`!document.querySelector('#context').hidden`)) {
		t.Errorf("expanding a record opened the context too")
	}

	// A malformed query: the error and where.
	searchFor(`level:(error`)
	status := text(t, ctx, `#status`)
	if !strings.HasPrefix(status, "Query error at column 7:") || !run(t, ctx, chromedp.Evaluate[bool](`document.querySelector('#q').classList.contains('bad') && document.querySelector('#q').selectionStart === 6`)) {
		t.Errorf("malformed query: status %q", status)
	}
	do(screenshot(art, "33-malformed-query"))

	// LogQL: its equivalent, runnable.
	searchFor(`{node="spark-2"} |= "Local node IP"`)
	do(waitJS(`!document.querySelector('#query-hint').hidden`), screenshot(art, "34-logql-hint"))
	if eq := text(t, ctx, `#query-hint .equivalent`); eq != `node:spark-2 "Local node IP"` {
		t.Errorf("LogQL hint %q", eq)
	}
	do(
		chromedp.Click(chromedp.CSS(`#query-hint .run-hint`)),
		waitJS(`document.querySelector('#q').value === 'node:spark-2 "Local node IP"' && document.querySelectorAll('#results .hit').length === 1 && document.querySelector('#query-hint').hidden`),
	)
	// The histogram's axis follows the hits: this one line is at 22:41:18.
	axis := run(t, ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#histogram-axis span')].map(s => s.textContent)`))
	if len(axis) != 2 || !strings.HasPrefix(axis[0], "2026-04-08 22:41") || !strings.HasPrefix(axis[1], "2026-04-08 22:41") {
		t.Errorf("histogram axis %q, want the minute of the hit", axis)
	}

	// Nothing found: a sentence, not an axis.
	searchFor("zzzneverlogged")
	if !run(t, ctx, chromedp.Evaluate[bool](`!document.querySelector('#empty').hidden && document.querySelector('#histogram').hidden && document.querySelectorAll('#histogram-axis span').length === 0`)) {
		t.Errorf("an empty result does not say so")
	}
	if msg := text(t, ctx, `#empty`); !regexp.MustCompile(`^No events match “zzzneverlogged”`).MatchString(msg) {
		t.Errorf("empty result says %q", msg)
	}
	do(screenshot(art, "35-empty"))
}

// TestBrowserLaunchesSayHowTheyEnded: a launch that came up says so, when
// and on which nodes, in the engine's sentence (serve's /api/launches),
// instead of an empty findings panel; without the route (an offline
// index) there is no launches panel.
func TestBrowserLaunchesSayHowTheyEnded(t *testing.T) {
	x := seedIndex(t)
	ready := time.Date(2026, 4, 8, 23, 48, 6, 0, time.UTC)
	launches := []finding.LaunchSummary{{Cluster: "dgx", Launch: 1, Outcome: "ready", Ready: ready, ReadyOn: []string{"spark-1"},
		Nodes: []string{"spark-1", "spark-2"}, Summary: "launch 1 came up at 2026-04-08 23:48:06 on 2 nodes (spark-1, spark-2)"}}
	ts := newServer(t, Config{Index: x, Findings: func() []finding.Finding { return nil },
		Routes: []Route{{Pattern: "GET /api/launches", Handler: JSON(func() []finding.LaunchSummary { return launches })}}})
	// Before the browser: a server's Close waits for the page's stream,
	// which ends with the browser (cleanups run last first).
	offline := newServer(t, Config{Index: x})
	ctx := newBrowser(t)
	art := artifactsDir(t)
	if err := chromedp.Do(ctx,
		chromedp.EmulateViewport(1400, 900),
		chromedp.Navigate(ts.URL+"/"),
		waitJS(`!document.querySelector('#launches-panel').hidden && document.querySelector('#launches .launch.outcome-ready') !== null`),
		screenshot(art, "40-launch-came-up"),
	); err != nil {
		t.Fatal(err)
	}
	if got := text(t, ctx, `#launches .launch`); !strings.Contains(got, "came up") || !strings.Contains(got, "launch 1 came up at 2026-04-08 23:48:06 on 2 nodes (spark-1, spark-2)") {
		t.Errorf("launch reads %q", got)
	}
	if got := text(t, ctx, `#findings`); !strings.Contains(got, "No rule has found a failure") {
		t.Errorf("findings panel reads %q", got)
	}

	if err := chromedp.Do(ctx,
		chromedp.Navigate(offline.URL+"/"),
		waitJS(`document.querySelectorAll('#findings details.finding').length > 0 && document.querySelector('#launches-panel').dataset.loaded === 'none'`),
	); err != nil {
		t.Fatal(err)
	}
	if !run(t, ctx, chromedp.Evaluate[bool](`document.querySelector('#launches-panel').hidden`)) {
		t.Errorf("an index without launches shows a launches panel")
	}
}
