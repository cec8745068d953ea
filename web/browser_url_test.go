package web

import (
	"regexp"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserSearchInURL: the search is in the URL, so a link opens the
// same search (filters included) and the back button returns to the last
// one; the timeline's axis shows times to the millisecond (it showed the
// range's end to the nanosecond); and at 1400 px nothing scrolls sideways.
func TestBrowserSearchInURL(t *testing.T) {
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
	css := func(s string) chromedp.CSS { return chromedp.CSS(s) }
	const ipOnSpark2 = `(() => { const hs = [...document.querySelectorAll('#results .hit')];
		return hs.length > 0 && hs.every(h => h.dataset.node === 'spark-2' && h.querySelector('.msg').textContent.includes('192.168.200.12')); })()`

	// A shared link: the query and the node filter come from the URL.
	do(
		chromedp.Navigate(ts.URL+"/?q=192.168.200.12&node=spark-2"),
		waitJS(`document.querySelector('#q').value === '192.168.200.12'`),
		waitJS(ipOnSpark2),
		waitJS(`document.querySelector('#facets button.facet.active[data-value="spark-2"]') !== null`),
		screenshot(art, "10-link-with-search"),
	)
	// A new search is recorded in the URL and the history...
	do(
		chromedp.SetValue(css(`#q`), "placement"),
		chromedp.Click(css(`#search-btn`)),
		waitJS(`new URLSearchParams(location.search).get('q') === 'placement'`),
		waitJS(`document.querySelector('#status').textContent.includes('hits')`),
	)
	// ...and the back button brings the previous search back, results too.
	do(
		eval(`history.back(); true`),
		waitJS(`document.querySelector('#q').value === '192.168.200.12' && new URLSearchParams(location.search).getAll('node').join() === 'spark-2'`),
		waitJS(ipOnSpark2),
	)

	// The timeline axis: five times, to the millisecond at most.
	do(waitJS(`document.querySelectorAll('#timeline .timeline-axis span').length === 5`))
	ticks := run(t, ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#timeline .timeline-axis span')].map(s => s.textContent)`))
	tickRE := regexp.MustCompile(`^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d{1,3})?$`)
	for _, tk := range ticks {
		if !tickRE.MatchString(tk) {
			t.Errorf("timeline axis shows %q, want a time to the millisecond (all: %q)", tk, ticks)
		}
	}

	// Nothing wider than the 1400 px window: not the results (long lines
	// included), not the timeline, not with the context panel open.
	wide := `document.documentElement.scrollWidth > document.documentElement.clientWidth`
	do(
		eval(`document.querySelector('#q').value = ''; true`),
		chromedp.Click(css(`#search-btn`)),
		waitJS(`document.querySelectorAll('#results .hit').length > 0`),
	)
	if run(t, ctx, chromedp.Evaluate[bool](wide)) {
		w := run(t, ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`))
		do(screenshot(art, "11-horizontal-scroll"))
		t.Errorf("the page scrolls sideways at 1400 px: %d px wide", w)
	}
	do(chromedp.Click(css(`#results .hit`)), chromedp.WaitVisible(css(`#context .ctx-line.focus`)))
	if run(t, ctx, chromedp.Evaluate[bool](wide)) {
		t.Errorf("with the context open, the page scrolls sideways at 1400 px")
	}
	do(
		chromedp.Click(css(`#context-close`)),
		chromedp.Click(css(`#by-node`)),
		waitJS(`document.querySelectorAll('#columns .column').length >= 1 && !document.querySelector('#columns').hidden`),
		eval(`document.querySelectorAll('#findings details').forEach(d => d.open = true); true`),
		screenshot(art, "12-columns-findings-open"),
	)
	if run(t, ctx, chromedp.Evaluate[bool](wide)) {
		w := run(t, ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`))
		t.Errorf("side by side with every finding open, the page is %d px wide at 1400 px", w)
	}
}
