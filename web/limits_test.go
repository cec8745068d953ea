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

// Paging by cursor over HTTP: after=NEXT of each page, until a page has no
// next, returns every hit of the query exactly once, newest first (the
// seed's untimed NCCL lines last); a cursor that is not one, or belongs to
// another query, is a 400 saying so; a page past the from cap is a 400
// pointing to after.
func TestAPICursorPaging(t *testing.T) {
	x := seedIndex(t)
	ts := newServer(t, Config{Index: x})
	var all index.Result
	if code := getJSON(t, ts.URL+"/api/search?size=1000", &all); code != 200 || all.Total < 20 || len(all.Hits) != int(all.Total) {
		t.Fatalf("all hits: %d, %d of %d", code, len(all.Hits), all.Total)
	}
	if all.Next != "" {
		t.Errorf("one page holds all hits, yet next is %q", all.Next)
	}
	seen := map[string]int{}
	var prev *index.Hit
	after := ""
	for pages := 0; ; pages++ {
		if pages > int(all.Total) {
			t.Fatalf("%d pages of 3 for %d hits", pages, all.Total)
		}
		var res index.Result
		u := ts.URL + "/api/search?size=3&after=" + url.QueryEscape(after)
		if code := getJSON(t, u, &res); code != 200 {
			t.Fatalf("page %d: %d", pages, code)
		}
		for _, h := range res.Hits {
			seen[h.ID]++
			if prev != nil && !h.Time.IsZero() && (prev.Time.IsZero() || h.Time.After(prev.Time)) {
				t.Fatalf("page %d: %s at %v after %s at %v", pages, h.ID, h.Time, prev.ID, prev.Time)
			}
			prev = &h
		}
		if res.Next == "" {
			break
		}
		after = res.Next
	}
	for _, h := range all.Hits {
		if seen[h.ID] != 1 {
			t.Errorf("%s (%v %s:%d) seen %d times", h.ID, h.Time, h.File, h.Line, seen[h.ID])
		}
	}
	if len(seen) != len(all.Hits) {
		t.Errorf("%d hits seen by cursor, %d in all", len(seen), len(all.Hits))
	}

	var e struct{ Error string }
	for _, c := range []struct{ url, want string }{
		{"/api/search?after=nonsense", "not a cursor"},
		{"/api/search?q=nccl&after=" + url.QueryEscape(after), "another query"},
		{"/api/search?from=3&after=" + url.QueryEscape(after), "from and after"},
		{"/api/search?from=599000", "after="},
	} {
		e.Error = ""
		if code := getJSON(t, ts.URL+c.url, &e); code != 400 || !strings.Contains(e.Error, c.want) {
			t.Errorf("%s: %d %q, want 400 saying %q", c.url, code, e.Error, c.want)
		}
	}
}
