package main

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/faultline/faultline/index"
	"github.com/faultline/faultline/internal/browsertest"
	"github.com/faultline/faultline/internal/testutil"
	"github.com/faultline/faultline/internal/webtest"
)

// The UI has shown the findings and the hits of the IP search: every hit
// holds the IP, both nodes answer, and the first finding is the seed's
// node IP mismatch.
const (
	findingsShown = `document.querySelectorAll('#findings .finding').length > 0 &&
		document.querySelector('#findings .finding summary').textContent.includes('192.168.200.12')`
	ipHitsShown = `(() => { const hs = [...document.querySelectorAll('#results .hit')];
		return hs.length > 0 && hs.every(h => h.querySelector('.msg').textContent.includes('192.168.200.12')) &&
			new Set(hs.map(h => h.dataset.node)).size === 2; })()`
)

// TestServeTokenUIInBrowser: `serve --http-token T` in a browser: the page
// asks for the token, a wrong one is refused, the right one opens the UI
// on the page asked for, with the findings (serve's /api/findings, which
// took the header only before), the search results and the live stream,
// all through the session cookie, which scripts cannot read.
func TestServeTokenUIInBrowser(t *testing.T) {
	const token = "serve-s3cret-token"
	s := startServe(t, "--demo", "--demo-logs", seed+"/failed", "--demo-pace", "1s", "--http-token", token)
	base := "http://" + s.http
	testutil.CheckFor(t, 60*time.Second, 100*time.Millisecond, func() error {
		if code, body := webtest.Body(t, base+"/api/findings", token); code != 200 || !strings.Contains(body, "ray-node-ip-mismatch") {
			return fmt.Errorf("/api/findings: %d %.100q", code, body)
		}
		return nil
	})
	ctx := browsertest.NewBrowser(t)
	css := func(s string) chromedp.CSS { return chromedp.CSS(s) }
	browsertest.Do(t, ctx,
		chromedp.Navigate(base+"/?q=192.168.200.12"),
		chromedp.WaitVisible(css(`#login #token`)),
		chromedp.SetValue(css(`#token`), "not-"+token),
		chromedp.Click(css(`#login-btn`)),
		chromedp.WaitVisible(css(`#login-error`)),
	)
	if p := browsertest.Eval[string](t, ctx, `location.pathname`); p != "/login" {
		t.Errorf("after a wrong token the browser is at %s, want the login page", p)
	}
	browsertest.Do(t, ctx,
		chromedp.SetValue(css(`#token`), token),
		chromedp.Click(css(`#login-btn`)),
		browsertest.WaitJS(findingsShown),
		browsertest.WaitJS(ipHitsShown),
	)
	if u := browsertest.Eval[string](t, ctx, `location.pathname + location.search`); u != "/?q=192.168.200.12" {
		t.Errorf("after the login the browser is at %s, want the page it asked for", u)
	}
	if c := browsertest.Eval[string](t, ctx, `document.cookie`); c != "" {
		t.Errorf("scripts can read the session cookie: %q", c)
	}
	// The stream (EventSource: no headers) opens with the cookie: the
	// findings' stream at once, the one with log lines once Live is ticked.
	browsertest.Do(t, ctx,
		browsertest.WaitJS(`state.stream !== null && state.stream.readyState === EventSource.OPEN`),
		chromedp.Click(css(`#live`)),
		browsertest.WaitJS(`state.live === true && state.stream.url.endsWith('/api/stream') && state.stream.readyState === EventSource.OPEN`),
	)
}

// TestUITokenInBrowser: `ui --http-token T` answers on every route only
// to the token (its routes walked one by one, wrong tokens in the header,
// the cookie and the query refused), and a browser that opens the page
// with ?token= once is in, with the token gone from its address bar.
func TestUITokenInBrowser(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if _, errs, code := runCmd(t, "ingest", "-q", "--data-dir", dir, filepath.Join(seed, "failed")); code != 0 {
		t.Fatalf("ingest: exit %d: %s", code, errs)
	}
	const token = "ui-s3cret-token"
	base, _, _ := startUI(t, "--data-dir", dir, "--http-token", token)

	// ui's routes, from the handler it builds (over another index: the
	// routes do not depend on it, and ui holds the index's lock).
	other, err := index.Open(t.TempDir(), index.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	h, err := uiHandler(other, token, nil)
	if err != nil {
		t.Fatal(err)
	}
	webtest.CheckRoutes(t, base, h, token)

	bctx := browsertest.NewBrowser(t)
	browsertest.Do(t, bctx,
		chromedp.Navigate(base+"/?token=wrong&q=192.168.200.12"),
		chromedp.WaitVisible(chromedp.CSS(`#login-error`)),
		chromedp.Navigate(base+"/?token="+url.QueryEscape(token)+"&q=192.168.200.12"),
		browsertest.WaitJS(findingsShown),
		browsertest.WaitJS(ipHitsShown),
	)
	if u := browsertest.Eval[string](t, bctx, `location.href`); strings.Contains(u, "token") {
		t.Errorf("the token stays in the address bar: %s", u)
	}
}
