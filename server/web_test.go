package server

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/faultline/faultline/internal/webtest"
	"github.com/faultline/faultline/shipper"
	"github.com/faultline/faultline/web"
)

func get(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// serve's HTTP is web's one surface, the UI and its API included, and
// --http-token protects all of it; a bearer header opens it.
func TestServeMountsWebUI(t *testing.T) {
	srv := startServer(t, Config{HTTPToken: "s3cret"})
	base := "http://" + srv.addrs.HTTP
	if code, _ := get(t, base+"/", ""); code != http.StatusUnauthorized {
		t.Errorf("GET / without the token: %d, want 401", code)
	}
	if code, _ := get(t, base+"/api/findings", ""); code != http.StatusUnauthorized {
		t.Errorf("GET /api/findings without the token: %d, want 401", code)
	}
	code, body := get(t, base+"/", "s3cret")
	if code != http.StatusOK || !strings.Contains(body, "<html") {
		t.Errorf("GET / = %d %.200q, want the UI", code, body)
	}
	if code, body := get(t, base+"/api/search?q=anything", "s3cret"); code != http.StatusOK {
		t.Errorf("GET /api/search = %d %.200q", code, body)
	}
	if code, body := get(t, base+"/api/findings", "s3cret"); code != http.StatusOK || strings.TrimSpace(body) != "[]" {
		t.Errorf("GET /api/findings = %d %q", code, body)
	}
}

// With --token, the embedded NATS server demands it: a shipper without the
// token is refused, one with it gets in.
func TestEmbeddedNATSToken(t *testing.T) {
	srv := startServer(t, Config{NATS: shipper.NATSOptions{Token: "t0k3n"}})
	if nc, err := nats.Connect(srv.addrs.NATS); err == nil {
		nc.Close()
		t.Fatal("connected without the token")
	}
	nc, err := nats.Connect(srv.addrs.NATS, nats.Token("t0k3n"))
	if err != nil {
		t.Fatalf("with the token: %v", err)
	}
	nc.Close()
	if !loopback("127.0.0.1:4222") || !loopback("localhost:1") || loopback("0.0.0.0:4222") || loopback("10.1.230.180:4222") {
		t.Error("loopback() is wrong")
	}
}

// TestServeEveryRouteWantsToken walks every route of serve's one HTTP
// surface (the web UI's, serve's own, the login page): none answers
// without the token, or with a wrong one in the header, the cookie or the
// query, but the open ones; the right one opens them all.
func TestServeEveryRouteWantsToken(t *testing.T) {
	var h *web.Handler
	srv := startServer(t, Config{HTTPToken: "s3cret", onHTTP: func(wh *web.Handler) { h = wh }})
	base := "http://" + srv.addrs.HTTP
	var patterns []string
	for _, r := range h.Routes() {
		patterns = append(patterns, r.Pattern)
		if r.Open != (r.Pattern == "GET /healthz" || r.Pattern == "GET /readyz" || strings.HasSuffix(r.Pattern, " /login")) {
			t.Errorf("%s: open %v", r.Pattern, r.Open)
		}
	}
	for _, want := range []string{"GET /", "GET /api/findings", "GET /api/search", "GET /api/stream", "GET /api/rules", "GET /version", "GET /metrics", "GET /healthz", "GET /readyz"} {
		if !slices.Contains(patterns, want) {
			t.Errorf("routes %v lack %s", patterns, want)
		}
	}
	webtest.CheckRoutes(t, base, h, "s3cret")
}

// TestServeCookieOpensEveryPanel: a browser signed in with the login form
// reads what the UI shows, serve's own routes included (with
// --http-token, the UI's findings panel got 401: serve's /api/findings
// took the header only).
func TestServeCookieOpensEveryPanel(t *testing.T) {
	srv := startServer(t, Config{HTTPToken: "s3cret"})
	base := "http://" + srv.addrs.HTTP
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	resp, err := browser.PostForm(base+"/login", url.Values{"token": {"s3cret"}, "next": {"/"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/" {
		t.Fatalf("login: %d at %s", resp.StatusCode, resp.Request.URL)
	}
	for _, p := range []string{"/api/findings", "/api/rules", "/version", "/api/search?q=x", "/api/timeline", "/metrics", "/healthz"} {
		resp, err := browser.Get(base + p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s with the session cookie: %d %.200q", p, resp.StatusCode, b)
		}
		if p == "/healthz" && !strings.Contains(string(b), `"records"`) {
			t.Errorf("/healthz with the session cookie: %s, want the counts", b)
		}
	}
}
