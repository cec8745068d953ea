package web

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/index"
	"github.com/faultline/faultline/parsers"
)

// A query the language cannot mean is a 400 that says where, for the
// search and the timeline alike.
func TestAPIMalformedQueryIs400WithPosition(t *testing.T) {
	ts := newServer(t, Config{Index: seedIndex(t)})
	for _, c := range []struct {
		q   string
		col int
	}{
		{`level:(error`, 7},
		{`node:spark-1 "Local node`, 14},
	} {
		for _, path := range []string{"/api/search", "/api/timeline"} {
			var body struct {
				Error    string `json:"error"`
				Position int    `json:"position"`
			}
			code := getJSON(t, ts.URL+path+"?q="+url.QueryEscape(c.q), &body)
			if code != 400 || body.Position != c.col || !strings.Contains(body.Error, "column") {
				t.Errorf("%s?q=%s: %d %+v, want 400 at column %d", path, c.q, code, body, c.col)
			}
		}
	}
}

// A LogQL query gets its equivalent; the equivalent finds what LogQL meant.
func TestAPILogQLHint(t *testing.T) {
	ts := newServer(t, Config{Index: seedIndex(t)})
	for _, c := range []struct{ q, want string }{
		{`{node="spark-1"}`, `node:spark-1`},
		{`{node="spark-1", level="error"} |= "placement group"`, `node:spark-1 level:error "placement group"`},
		{`{node=~"spark-1|spark-2"} != "INFO"`, `node:spark-1 OR node:spark-2 -INFO`},
		{`|= "Local node IP"`, `"Local node IP"`},
	} {
		var res struct {
			Total uint64 `json:"total"`
			Hint  struct {
				Language, Equivalent string
			} `json:"hint"`
		}
		if code := getJSON(t, ts.URL+"/api/search?q="+url.QueryEscape(c.q), &res); code != 200 {
			t.Fatalf("%s: %d", c.q, code)
		}
		if res.Hint.Language != "LogQL" || res.Hint.Equivalent != c.want {
			t.Errorf("%s: hint %+v, want %q", c.q, res.Hint, c.want)
			continue
		}
		var eq index.Result
		getJSON(t, ts.URL+"/api/search?q="+url.QueryEscape(res.Hint.Equivalent), &eq)
		if eq.Total == 0 {
			t.Errorf("the equivalent %q of %s finds nothing", c.want, c.q)
		}
	}
	var plain map[string]any
	getJSON(t, ts.URL+"/api/search?q=node:spark-1", &plain)
	if _, ok := plain["hint"]; ok {
		t.Errorf("a Faultline query got a hint: %v", plain["hint"])
	}
}

// The histogram spans the hits, not the index: a search for two lines 11
// seconds apart gets buckets over those seconds (in steps of a readable
// width), the first and last holding the first and last hit.
func TestAPIHistogramFollowsTheHits(t *testing.T) {
	ts := newServer(t, Config{Index: seedIndex(t)})
	var res index.Result
	getJSON(t, ts.URL+"/api/search?histogram=10&size=100&q="+url.QueryEscape(`"Local node IP"`), &res)
	if len(res.Hits) < 2 || len(res.Histogram) == 0 {
		t.Fatalf("%d hits, %d buckets", len(res.Hits), len(res.Histogram))
	}
	lo, hi := res.Hits[0].Time, res.Hits[0].Time
	for _, h := range res.Hits {
		lo, hi = minTime(lo, h.Time), maxTime(hi, h.Time)
	}
	first, last := res.Histogram[0], res.Histogram[len(res.Histogram)-1]
	if lo.Before(first.Start) || !lo.Before(first.End) || hi.Before(last.Start) || !hi.Before(last.End) {
		t.Errorf("buckets %v – %v, hits %v – %v", first.Start, last.End, lo, hi)
	}
	if first.Count == 0 || last.Count == 0 {
		t.Errorf("the first and last buckets hold the first and last hit: %+v", res.Histogram)
	}
	var tl Timeline
	getJSON(t, ts.URL+"/api/timeline?q="+url.QueryEscape(`"Local node IP"`), &tl)
	if !tl.Start.Equal(lo) || tl.End.Before(hi) || tl.End.Sub(hi) > time.Second {
		t.Errorf("timeline %v – %v, hits %v – %v", tl.Start, tl.End, lo, hi)
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// logs=0 is a stream of findings only: the UI's findings panel, always
// open, does not carry every log line while "Live lines" is off.
func TestStreamFindingsOnly(t *testing.T) {
	evs, fds := NewHub[*parsers.Event](16), NewHub[finding.Finding](16)
	ts := newServer(t, Config{Index: seedIndex(t), LiveEvents: evs, LiveFindings: fds})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+"/api/stream?logs=0", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	for fds.Subscribers() == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	if n := evs.Subscribers(); n != 0 {
		t.Fatalf("logs=0 subscribed to the log lines (%d)", n)
	}
	f := finding.Finding{ID: "f1", Title: "t", Nodes: []string{"spark-1"}, NodeFacts: []finding.NodeFact{{Fact: "registered_ip", Value: "10.1.230.180", Node: "spark-1"}}}
	fds.Publish(f)
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if l := sc.Text(); strings.HasPrefix(l, "data: ") {
			var v findingView
			if err := json.Unmarshal([]byte(l[6:]), &v); err != nil || v.ID != "f1" || len(v.Table.Rows) != 1 || v.Table.Rows[0].Node != "spark-1" {
				t.Errorf("finding event %s (%v): want the finding with its table", l, err)
			}
			return
		}
	}
	t.Fatal("no finding on the stream")
}
