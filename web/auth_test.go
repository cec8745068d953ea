package web

import (
	"crypto/sha256"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// noRedirect is a client that shows redirects instead of following them.
func noRedirect(c *http.Client) *http.Client {
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return c
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestLoginPage: the page answers a browser without the token with the
// login form (401), the form's right token becomes an HttpOnly,
// SameSite=Strict cookie and the browser goes back to the page it asked
// for; a wrong token is the form again, saying so; the form sends nobody
// to another site.
func TestLoginPage(t *testing.T) {
	x := seedIndex(t)
	ts := newServer(t, Config{Index: x, Token: "s3cret"})
	client := noRedirect(&http.Client{})

	resp, err := client.Get(ts.URL + "/?q=ray&node=spark-2")
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(t, resp)
	if resp.StatusCode != 401 || !strings.Contains(body, `<form id="login" method="post" action="/login">`) {
		t.Fatalf("GET / without the token: %d %.300q, want 401 with the login form", resp.StatusCode, body)
	}
	if !strings.Contains(body, `name="next" value="/?node=spark-2&amp;q=ray"`) {
		t.Errorf("login form does not come back to the page asked for: %q", body)
	}
	// The page's inline style is allowed by its hash, nothing else.
	css := regexp.MustCompile(`(?s)<style>(.*?)</style>`).FindStringSubmatch(body)
	sum := sha256.Sum256([]byte(css[1]))
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"'") ||
		!strings.Contains(csp, "default-src 'none'") {
		t.Errorf("login page CSP %q does not admit exactly its style", csp)
	}

	post := func(token, next string) *http.Response {
		t.Helper()
		resp, err := client.PostForm(ts.URL+"/login", url.Values{"token": {token}, "next": {next}})
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	resp = post("nope", "/")
	if body := readAll(t, resp); resp.StatusCode != 401 || !strings.Contains(body, "not the right one") || len(resp.Cookies()) != 0 {
		t.Errorf("wrong token: %d, cookies %v, %.200q; want 401 and the form saying so", resp.StatusCode, resp.Cookies(), body)
	}
	resp = post("s3cret", "/?q=ray")
	resp.Body.Close()
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || loc != "/?q=ray" {
		t.Errorf("right token: %d to %q, want 303 to /?q=ray", resp.StatusCode, loc)
	}
	if cs := resp.Cookies(); len(cs) != 1 || cs[0].Name != tokenCookie || !cs[0].HttpOnly || cs[0].SameSite != http.SameSiteStrictMode || cs[0].Secure || cs[0].Path != "/" {
		t.Errorf("session cookie %+v, want HttpOnly, SameSite=Strict, path /, not Secure over plain HTTP", cs)
	}
	for _, next := range []string{"//evil.example/", "https://evil.example/", `/\evil.example`, "javascript:alert(1)", ""} {
		resp = post("s3cret", next)
		resp.Body.Close()
		if loc := resp.Header.Get("Location"); loc != "/" {
			t.Errorf("next=%q: sent to %q, want /", next, loc)
		}
	}

	// A browser: the form's cookie opens the API, the stream and metrics.
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	resp, err = browser.PostForm(ts.URL+"/login", url.Values{"token": {"s3cret"}, "next": {"/"}})
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(t, resp); resp.StatusCode != 200 || !strings.Contains(body, `id="findings"`) {
		t.Errorf("after the login: %d %.200q, want the UI", resp.StatusCode, body)
	}
	for _, p := range []string{"/api/findings", "/api/search?q=ray", "/metrics", "/login"} {
		resp, err := browser.Get(ts.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("%s with the cookie: %d", p, resp.StatusCode)
		}
		if p == "/login" && resp.Request.URL.Path != "/" {
			t.Errorf("/login when signed in stays at %s, want on to /", resp.Request.URL)
		}
	}

	// Refused requests are counted by route.
	resp, err = browser.Get(ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	if m := readAll(t, resp); !strings.Contains(m, `faultline_http_requests_total{code="401",route="/"} 1`) ||
		!strings.Contains(m, `faultline_http_requests_total{code="401",route="/login"} 1`) {
		t.Errorf("/metrics does not count the refused requests: %s", grepLines(m, "faultline_http_requests_total"))
	}
}

func grepLines(s, sub string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return out
}

// TestCookieSecureOverTLS: over TLS, or behind a proxy that says the page
// came over TLS, the session cookie is Secure.
func TestCookieSecureOverTLS(t *testing.T) {
	x := seedIndex(t)
	h, err := NewHandler(Config{Index: x, Token: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	tls := httptest.NewTLSServer(h)
	defer tls.Close()
	client := noRedirect(tls.Client())
	for _, c := range []struct {
		name string
		do   func() (*http.Response, error)
	}{
		{"login form", func() (*http.Response, error) {
			return client.PostForm(tls.URL+"/login", url.Values{"token": {"s3cret"}})
		}},
		{"?token=", func() (*http.Response, error) { return client.Get(tls.URL + "/?token=s3cret") }},
	} {
		resp, err := c.do()
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if cs := resp.Cookies(); resp.StatusCode != http.StatusSeeOther || len(cs) != 1 || !cs[0].Secure {
			t.Errorf("%s over TLS: %d, cookies %+v; want a Secure cookie", c.name, resp.StatusCode, cs)
		}
	}
	plain := newServer(t, Config{Index: x, Token: "s3cret"})
	req, _ := http.NewRequest("POST", plain.URL+"/login", strings.NewReader("token=s3cret"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Forwarded-Proto", "https")
	resp, err := noRedirect(&http.Client{}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if cs := resp.Cookies(); len(cs) != 1 || !cs[0].Secure {
		t.Errorf("behind a TLS proxy: cookies %+v, want Secure", cs)
	}
}

// TestAddedRoutes: Config.Routes are served behind the same check, an
// open one tells the token holder apart with Authorized, and one with a
// built-in pattern replaces it.
func TestAddedRoutes(t *testing.T) {
	x := seedIndex(t)
	say := func(s string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if Authorized(r) {
				s += " (authorized)"
			}
			w.Write([]byte(s))
		})
	}
	ts := newServer(t, Config{Index: x, Token: "s3cret", Routes: []Route{
		{Pattern: "GET /api/extra", Handler: say("extra")},
		{Pattern: "GET /healthz", Open: true, Handler: say("mine")},
	}})
	get := func(path, token string) (int, string) {
		req, _ := http.NewRequest("GET", ts.URL+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, readAll(t, resp)
	}
	for _, c := range []struct {
		path, token string
		code        int
		body        string
	}{
		{"/api/extra", "", 401, ""},
		{"/api/extra", "nope", 401, ""},
		{"/api/extra", "s3cret", 200, "extra (authorized)"},
		{"/healthz", "", 200, "mine"},
		{"/healthz", "nope", 200, "mine"},
		{"/healthz", "s3cret", 200, "mine (authorized)"},
	} {
		code, body := get(c.path, c.token)
		if code != c.code || (c.body != "" && body != c.body) {
			t.Errorf("%s with token %q: %d %q, want %d %q", c.path, c.token, code, body, c.code, c.body)
		}
	}
	if code, body := get("/api/extra", "nope"); !strings.Contains(body, `"error":"unauthorized`) {
		t.Errorf("API 401 body: %d %q, want JSON naming the problem", code, body)
	}
}

// BenchmarkAuth is the cost of the token check on a cheap route
// (/api/syntax): without a token, with the bearer header, with the
// cookie, and a refused request.
func BenchmarkAuth(b *testing.B) {
	x := seedIndex(b)
	open, err := NewHandler(Config{Index: x})
	if err != nil {
		b.Fatal(err)
	}
	guarded, err := NewHandler(Config{Index: x, Token: "s3cret-token-of-32-bytes-length!"})
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		h    http.Handler
		set  func(*http.Request)
		want int
	}{
		{"no token set", open, func(*http.Request) {}, 200},
		{"bearer", guarded, func(r *http.Request) { r.Header.Set("Authorization", "Bearer s3cret-token-of-32-bytes-length!") }, 200},
		{"cookie", guarded, func(r *http.Request) {
			r.AddCookie(&http.Cookie{Name: tokenCookie, Value: "s3cret-token-of-32-bytes-length!"})
		}, 200},
		{"refused", guarded, func(*http.Request) {}, 401},
	} {
		b.Run(c.name, func(b *testing.B) {
			req := httptest.NewRequest("GET", "/api/syntax", nil)
			c.set(req)
			for b.Loop() {
				w := httptest.NewRecorder()
				c.h.ServeHTTP(w, req)
				if w.Code != c.want {
					b.Fatalf("%d, want %d", w.Code, c.want)
				}
			}
		})
	}
}
