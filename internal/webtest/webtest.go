// Package webtest checks the HTTP surface of a web.Handler: a walk over
// every route that checks the token guards it.
package webtest

import (
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/web"
)

// wildcard is a path wildcard of a ServeMux pattern.
var wildcard = regexp.MustCompile(`\{[^}]*\}`)

// CheckRoutes requests every route of h on base (a served h, "http://host:port")
// and checks the token guards it: without a credential, and with a wrong
// one as the header, the cookie or ?token=, every route but the open ones
// answers 401; ?token= is taken on the UI page only (and the right one
// there is a redirect without it); with the right header or cookie no
// route answers 401. A path no route matches is 401 without the token too.
func CheckRoutes(t *testing.T, base string, h *web.Handler, token string) {
	t.Helper()
	client := &http.Client{Timeout: 20 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	do := func(method, path string, set func(*http.Request)) (int, http.Header) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if set != nil {
			set(req)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		// /api/stream streams until closed: the status is all that counts.
		resp.Body.Close()
		return resp.StatusCode, resp.Header
	}
	withQuery := func(path, tok string) string {
		return path + "?token=" + url.QueryEscape(tok)
	}
	routes := h.Routes()
	if len(routes) < 5 {
		t.Fatalf("only %d routes listed: %v", len(routes), routes)
	}
	// Under the UI's catch-all "GET /": a page, so it takes ?token= too.
	const unmatched = "GET /no/such/route"
	routes = append(routes, web.Route{Pattern: unmatched})
	for _, r := range routes {
		method, path, found := strings.Cut(r.Pattern, " ")
		if !found {
			method, path = http.MethodGet, r.Pattern
		}
		path = wildcard.ReplaceAllString(path, "x")
		name := method + " " + path
		if !r.Open {
			for _, c := range []struct {
				what string
				path string
				set  func(*http.Request)
			}{
				{"no credential", path, nil},
				{"a wrong header", path, func(q *http.Request) { q.Header.Set("Authorization", "Bearer wrong-"+token) }},
				{"a header of another scheme", path, func(q *http.Request) { q.SetBasicAuth("faultline", token) }},
				{"a wrong cookie", path, func(q *http.Request) { q.AddCookie(&http.Cookie{Name: "faultline_token", Value: "wrong-" + token}) }},
				{"a wrong ?token=", withQuery(path, "wrong-"+token), nil},
				{"a wrong header beside the right cookie (the header decides)", path, func(q *http.Request) {
					q.Header.Set("Authorization", "Bearer wrong-"+token)
					q.AddCookie(&http.Cookie{Name: "faultline_token", Value: token})
				}},
			} {
				if code, _ := do(method, c.path, c.set); code != http.StatusUnauthorized {
					t.Errorf("%s with %s: %d, want 401", name, c.what, code)
				}
			}
			code, hd := do(method, withQuery(path, token), nil)
			switch {
			case r.Pattern == "GET /" || r.Pattern == unmatched:
				if loc := hd.Get("Location"); code != http.StatusSeeOther || strings.Contains(loc, "token") {
					t.Errorf("%s with the right ?token=: %d to %q, want 303 to the page without it", name, code, loc)
				}
			case code != http.StatusUnauthorized:
				t.Errorf("%s with the right ?token=: %d, want 401 (only the UI page takes ?token=)", name, code)
			}
		}
		if code, _ := do(method, path, func(q *http.Request) { q.Header.Set("Authorization", "Bearer "+token) }); code == http.StatusUnauthorized {
			t.Errorf("%s with the right header: 401", name)
		}
		if code, _ := do(method, path, func(q *http.Request) {
			q.AddCookie(&http.Cookie{Name: "faultline_token", Value: token})
		}); code == http.StatusUnauthorized {
			t.Errorf("%s with the right cookie: 401", name)
		}
	}
}

// Body GETs url with an optional bearer token and returns the status and
// the body.
func Body(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}
