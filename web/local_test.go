package web

import (
	"net/url"
	"testing"
	"time"

	"github.com/faultline/faultline/index"
)

// TestLocalAnswersLocalRequests: with local=1, search, context and the
// timeline are answered by Config.Local (a peer's own part of a fan-out),
// without it by Config.Index; with no Local, Index answers both.
func TestLocalAnswersLocalRequests(t *testing.T) {
	seed := seedIndex(t)
	empty, err := index.Open(t.TempDir(), index.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { empty.Close() })
	res, err := seed.Search(t.Context(), index.Query{Size: 1})
	if err != nil || len(res.Hits) == 0 {
		t.Fatalf("seed: %v", err)
	}
	id := res.Hits[0].ID
	for _, c := range []struct {
		name        string
		cfg         Config
		local, main bool // whether the seed answers
	}{
		{"local set", Config{Index: empty, Local: seed}, true, false},
		{"local nil", Config{Index: seed}, true, true},
	} {
		ts := newServer(t, c.cfg)
		for _, local := range []bool{true, false} {
			suffix, want := "", c.main
			if local {
				suffix, want = "&local=1", c.local
			}
			var r index.Result
			getJSON(t, ts.URL+"/api/search?size=1"+suffix, &r)
			var tl Timeline
			getJSON(t, ts.URL+"/api/timeline?q="+suffix, &tl)
			code := getJSON(t, ts.URL+"/api/context/"+url.PathEscape(id)+"?n=1"+suffix, nil)
			if got := r.Total > 0; got != want || (len(tl.Lanes) > 0) != want || (code == 200) != want {
				t.Errorf("%s, local=%v: total %d, %d lanes, context %d; want the seed index answering: %v",
					c.name, local, r.Total, len(tl.Lanes), code, want)
			}
		}
	}
}

// TestParseHistogramRange: histogram_since and histogram_until set the
// histogram's range, not a filter.
func TestParseHistogramRange(t *testing.T) {
	now := time.Now()
	q, err := ParseQuery(url.Values{"histogram": {"10"}, "histogram_since": {"2026-03-14T09:26:00.5Z"},
		"histogram_until": {"2026-03-14T09:27:00Z"}}, now)
	if err != nil {
		t.Fatal(err)
	}
	want := time.Date(2026, 3, 14, 9, 26, 0, 5e8, time.UTC)
	if !q.HistogramSince.Equal(want) || !q.HistogramUntil.Equal(want.Add(59500*time.Millisecond)) || !q.Since.IsZero() || !q.Until.IsZero() {
		t.Errorf("query %+v", q)
	}
	if _, err := ParseQuery(url.Values{"histogram_since": {"yesterday"}}, now); err == nil {
		t.Error("a bad histogram_since was taken")
	}
}
