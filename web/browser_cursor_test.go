package web

import (
	"slices"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserPagesByCursor: the UI's next button asks for the page after
// the server's cursor (after= in the request and the URL, no from), pages
// hold different hits, and the previous button comes back to the same
// pages.
func TestBrowserPagesByCursor(t *testing.T) {
	x := seedIndex(t)
	ts := newServer(t, Config{Index: x})
	ctx := newBrowser(t)
	do := func(steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatal(err)
		}
	}
	ids := func() []string {
		t.Helper()
		return run(t, ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#results .hit')].map(h => h.dataset.id)`))
	}
	do(
		chromedp.Navigate(ts.URL+"/"),
		waitJS(`document.querySelectorAll('#results .hit').length > 0`),
		eval(`state.size = 5; document.querySelector('#search-btn').click(); true`),
		waitJS(`document.querySelectorAll('#results .hit').length === 5 && !document.querySelector('#next').disabled`),
	)
	var pages [][]string
	pages = append(pages, ids())
	for n := 1; n <= 2; n++ {
		prev := pages[n-1]
		do(chromedp.Click(chromedp.CSS(`#next`)))
		do(waitJS(`new URLSearchParams(location.search).get('from') === '` + []string{"", "5", "10"}[n] + `' && new URLSearchParams(location.search).get('after') !== null`))
		do(waitJS(`(() => { const ids = [...document.querySelectorAll('#results .hit')].map(h => h.dataset.id);
			return ids.length === 5 && !ids.includes(` + jsString(prev[0]) + `); })()`))
		pages = append(pages, ids())
	}
	seen := map[string]bool{}
	for _, p := range pages {
		for _, id := range p {
			if seen[id] {
				t.Errorf("hit %s on two pages: %v", id, pages)
			}
			seen[id] = true
		}
	}
	for n := 1; n >= 0; n-- {
		do(chromedp.Click(chromedp.CSS(`#prev`)))
		do(waitJS(`(() => { const ids = [...document.querySelectorAll('#results .hit')].map(h => h.dataset.id).sort();
			return ids.join() === ` + jsString(sortedJoin(pages[n])) + `; })()`))
	}
}

func jsString(s string) string { return "'" + s + "'" } // IDs are hex

func sortedJoin(ids []string) string {
	s := slices.Clone(ids)
	slices.Sort(s)
	out := ""
	for i, id := range s {
		if i > 0 {
			out += ","
		}
		out += id
	}
	return out
}
