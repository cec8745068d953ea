package web_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/faultline/faultline/index"
	"github.com/faultline/faultline/internal/webtest"
	"github.com/faultline/faultline/web"
)

// TestEveryRouteWantsToken walks every route the handler lists, an added
// one included: none answers without the token (or with a wrong one in the
// header, cookie or query) but the open ones, and the right one opens all.
func TestEveryRouteWantsToken(t *testing.T) {
	x, err := index.Open(t.TempDir(), index.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	h, err := web.NewHandler(web.Config{Index: x, Token: "s3cret", Routes: []web.Route{
		{Pattern: "GET /api/extra/{name}", Handler: web.JSON(func() string { return "extra" })},
	}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(h)
	defer ts.Close()
	webtest.CheckRoutes(t, ts.URL, h, "s3cret")

	open := map[string]bool{}
	for _, r := range h.Routes() {
		if r.Open {
			open[r.Pattern] = true
		}
	}
	if len(open) != 3 || !open["GET /healthz"] || !open["GET /login"] || !open["POST /login"] {
		t.Errorf("open routes %v, want /healthz and the login page only", open)
	}
	if code, body := webtest.Body(t, ts.URL+"/healthz", ""); code != http.StatusOK || body != "ok\n" {
		t.Errorf("/healthz without the token: %d %q", code, body)
	}
}
