package web

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/index"
)

// A search that asks too much is a 400 that says why; one that reaches the
// search deadline is a 503 that says so (search and context alike).
func TestAPIQueryLimits(t *testing.T) {
	x := seedIndex(t)
	ts := newServer(t, Config{Index: x})
	var e struct{ Error string }
	if code := getJSON(t, ts.URL+"/api/search?from=599000", &e); code != 400 || !strings.Contains(e.Error, "too deep") {
		t.Errorf("from=599000: %d %q, want 400 saying the page is too deep", code, e.Error)
	}
	var res index.Result
	if code := getJSON(t, ts.URL+"/api/search?q=ray&size=1", &res); code != 200 || len(res.Hits) != 1 {
		t.Fatalf("search: %d, %d hits", code, len(res.Hits))
	}
	id := res.Hits[0].ID

	slow, err := index.Open(seedDir, index.Options{ReadOnly: true, SearchTimeout: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	ts = newServer(t, Config{Index: slow})
	for _, u := range []string{"/api/search?q=" + url.QueryEscape("/zz.*qq/"), "/api/context/" + url.PathEscape(id)} {
		e.Error = ""
		if code := getJSON(t, ts.URL+u, &e); code != 503 || !strings.Contains(e.Error, "deadline") {
			t.Errorf("%s past the deadline: %d %q, want 503 naming the deadline", u, code, e.Error)
		}
	}
}
