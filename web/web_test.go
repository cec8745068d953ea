package web

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/index"
	"github.com/faultline/faultline/parsers"
	"github.com/faultline/faultline/pipeline"
	"github.com/faultline/faultline/rule"
)

// repoRoot is the module root, for the seed logs.
func repoRoot(t testing.TB) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(file))
}

var (
	seedOnce sync.Once
	seedDir  string
	seedErr  error
)

// seedIndex indexes the seed scenario's failed launch (both nodes) and the
// seed's script-injection log as a third file of spark-1, with the
// findings of the built-in rules, the way `analyzer ingest` does. It is
// built once per test binary, in a directory removed at exit by TestMain.
func seedIndex(t testing.TB) *index.Index {
	t.Helper()
	seedOnce.Do(func() {
		seedDir, seedErr = buildSeed(repoRoot(t))
	})
	if seedErr != nil {
		t.Fatalf("seed index: %v", seedErr)
	}
	x, err := index.Open(seedDir, index.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	return x
}

func buildSeed(root string) (string, error) {
	dir := filepath.Join(tempRoot, "seed-index")
	seed := filepath.Join(root, "testdata", "logs", "seed")
	inputs, err := pipeline.ParseArgs([]string{
		"spark-1=" + filepath.Join(seed, "failed", "spark-1"),
		"spark-2=" + filepath.Join(seed, "failed", "spark-2"),
		"spark-1=" + filepath.Join(seed, "script-injection", "ui-escaping.log"),
	})
	if err != nil {
		return "", err
	}
	rules, err := rule.LoadBuiltin()
	if err != nil {
		return "", err
	}
	eng := rule.NewEngine(rules)
	x, err := index.Open(dir, index.Options{})
	if err != nil {
		return "", err
	}
	_, err = pipeline.Replay(context.Background(), inputs, pipeline.Options{Cluster: "dgx"}, func(ev *parsers.Event) error {
		// Paths as a user in the repository gives them (what the
		// screenshots show), not this machine's.
		if rel, err := filepath.Rel(root, ev.File); err == nil {
			ev.File = rel
		}
		eng.Observe(ev)
		return x.Add(ev)
	})
	if err != nil {
		x.Close()
		return "", err
	}
	if err := x.PutFindings(eng.Findings()); err != nil {
		x.Close()
		return "", err
	}
	return dir, x.Close()
}

func newServer(t testing.TB, cfg Config) *httptest.Server {
	t.Helper()
	h, err := NewHandler(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts
}

func getJSON(t testing.TB, url string, v any) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if v != nil {
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil && resp.StatusCode == 200 {
			t.Fatalf("%s: %v", url, err)
		}
	}
	return resp.StatusCode
}

func TestAPISearchContextFindings(t *testing.T) {
	x := seedIndex(t)
	ts := newServer(t, Config{Index: x})

	var res index.Result
	if code := getJSON(t, ts.URL+"/api/search?q=192.168.200.12&facets=1&histogram=30&highlight=1&size=200", &res); code != 200 {
		t.Fatalf("search: %d", code)
	}
	nodes := map[string]bool{}
	for _, h := range res.Hits {
		nodes[h.Node] = true
		if len(h.Highlights) == 0 && strings.Contains(h.Message, "192.168.200.12") {
			t.Errorf("hit without highlights: %q", h.Message)
		}
	}
	if !nodes["spark-1"] || !nodes["spark-2"] {
		t.Errorf("search 192.168.200.12: nodes %v, want spark-1 and spark-2", nodes)
	}
	if len(res.Facets["node"]) != 2 || len(res.Histogram) == 0 {
		t.Errorf("facets %v, histogram %d buckets", res.Facets, len(res.Histogram))
	}

	var f2 index.Result
	getJSON(t, ts.URL+"/api/search?q=192.168.200.12&node=spark-2", &f2)
	if f2.Total == 0 || f2.Total >= res.Total {
		t.Errorf("node filter: %d of %d", f2.Total, res.Total)
	}
	for _, h := range f2.Hits {
		if h.Node != "spark-2" {
			t.Errorf("node filter let through %s", h.Node)
		}
	}

	var fs []finding.Finding
	getJSON(t, ts.URL+"/api/findings", &fs)
	if len(fs) == 0 || len(fs[0].Evidence) == 0 {
		t.Fatalf("findings: %+v", fs)
	}
	ev := fs[0].Evidence[0]
	var c index.Context
	if code := getJSON(t, ts.URL+"/api/context/"+ev.RecordID+"?n=3", &c); code != 200 {
		t.Fatalf("context of evidence %s: %d", ev.RecordID, code)
	}
	// Evidence names the line of the fact, which may be inside a
	// multi-line record.
	if c.Hit.ID != ev.RecordID || c.Hit.Node != ev.Node || ev.Line < c.Hit.Line || ev.Line >= c.Hit.Line+max(c.Hit.Lines, 1) {
		t.Errorf("context hit %s %s:%d, evidence %s %s:%d", c.Hit.ID, c.Hit.Node, c.Hit.Line, ev.RecordID, ev.Node, ev.Line)
	}
	if code := getJSON(t, ts.URL+"/api/context/nope", nil); code != 404 {
		t.Errorf("unknown context: %d, want 404", code)
	}
	if code := getJSON(t, ts.URL+"/api/search?q=pid:abc", nil); code != 400 {
		t.Errorf("bad query: %d, want 400", code)
	}

	var tl Timeline
	getJSON(t, ts.URL+"/api/timeline", &tl)
	if len(tl.Lanes) != 2 || tl.Lanes[0].Node != "spark-1" || len(tl.Lanes[0].Errors) == 0 {
		t.Errorf("timeline lanes: %+v", tl.Lanes)
	}
}

func TestAuthToken(t *testing.T) {
	x := seedIndex(t)
	ts := newServer(t, Config{Index: x, Token: "s3cret"})
	for _, c := range []struct {
		name string
		req  func() *http.Request
		want int
	}{
		{"none", func() *http.Request { r, _ := http.NewRequest("GET", ts.URL+"/api/findings", nil); return r }, 401},
		{"wrong", func() *http.Request {
			r, _ := http.NewRequest("GET", ts.URL+"/api/findings", nil)
			r.Header.Set("Authorization", "Bearer nope")
			return r
		}, 401},
		{"bearer", func() *http.Request {
			r, _ := http.NewRequest("GET", ts.URL+"/api/findings", nil)
			r.Header.Set("Authorization", "Bearer s3cret")
			return r
		}, 200},
		{"ui page", func() *http.Request { r, _ := http.NewRequest("GET", ts.URL+"/", nil); return r }, 401},
		{"bearer any case", func() *http.Request {
			r, _ := http.NewRequest("GET", ts.URL+"/api/findings", nil)
			r.Header.Set("Authorization", "bearer s3cret")
			return r
		}, 200},
		// The entry page takes ?token= once: cookie set, and off to the
		// same page without the token in the URL.
		{"query token", func() *http.Request { r, _ := http.NewRequest("GET", ts.URL+"/?token=s3cret&q=ray", nil); return r }, 303},
		{"query token, wrong", func() *http.Request { r, _ := http.NewRequest("GET", ts.URL+"/?token=nope", nil); return r }, 401},
		{"query token on the API", func() *http.Request {
			r, _ := http.NewRequest("GET", ts.URL+"/api/findings?token=s3cret", nil)
			return r
		}, 401},
		{"metrics", func() *http.Request { r, _ := http.NewRequest("GET", ts.URL+"/metrics", nil); return r }, 401},
	} {
		noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := noFollow.Do(c.req())
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s: %d, want %d", c.name, resp.StatusCode, c.want)
		}
		if c.name == "query token" {
			if len(resp.Cookies()) == 0 {
				t.Error("?token= did not set the session cookie")
			}
			if loc := resp.Header.Get("Location"); loc != "/?q=ray" {
				t.Errorf("?token= redirects to %q, want /?q=ray", loc)
			}
		}
	}
	// The browser's way in: the cookie from the entry page opens the rest.
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	resp, err := browser.Get(ts.URL + "/?token=s3cret")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Request.URL.RawQuery != "" {
		t.Errorf("entry page: %d at %s, want 200 without the token in the URL", resp.StatusCode, resp.Request.URL)
	}
	resp, err = browser.Get(ts.URL + "/api/findings")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("/api/findings with the session cookie: %d", resp.StatusCode)
	}
}

func TestMetrics(t *testing.T) {
	x := seedIndex(t)
	ts := newServer(t, Config{Index: x})
	getJSON(t, ts.URL+"/api/search?q=ray", nil)
	var b []byte
	// The request is counted after its response is written: poll a moment.
	for deadline := time.Now().Add(3 * time.Second); ; {
		resp, err := http.Get(ts.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(b), `route="/api/search"`) || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, want := range []string{`faultline_http_requests_total{code="200",route="/api/search"} 1`,
		"faultline_index_documents ", "faultline_findings ", "faultline_http_request_duration_seconds_bucket", "go_goroutines"} {
		if !strings.Contains(string(b), want) {
			var got []string
			for _, l := range strings.Split(string(b), "\n") {
				if strings.Contains(l, "faultline_http_requests_total") {
					got = append(got, l)
				}
			}
			t.Errorf("/metrics lacks %q; has %q", want, got)
		}
	}
}

func TestStreamSendsEventsAndFindings(t *testing.T) {
	x := seedIndex(t)
	evs, fds := NewHub[*parsers.Event](16), NewHub[finding.Finding](16)
	ts := newServer(t, Config{Index: x, LiveEvents: evs, LiveFindings: fds})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+"/api/stream", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	for evs.Subscribers() == 0 || fds.Subscribers() == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	evs.Publish(&parsers.Event{Record: parsers.Record{ID: "r1", Node: "spark-9"}, Message: "<script>live</script>"})
	fds.Publish(finding.Finding{ID: "f9", Title: "live finding"})
	sc := bufio.NewScanner(resp.Body)
	var got []string
	for sc.Scan() && len(got) < 4 {
		if l := sc.Text(); strings.HasPrefix(l, "event:") || strings.HasPrefix(l, "data:") {
			got = append(got, l)
		}
	}
	want := []string{"event: log", `"node":"spark-9"`, "event: finding", `"title":"live finding"`}
	for i, w := range want {
		if i >= len(got) || !strings.Contains(got[i], w) {
			t.Fatalf("stream %q, want lines containing %q", got, want)
		}
	}
}

func TestParseQueryParams(t *testing.T) {
	now := time.Date(2026, 4, 8, 23, 0, 0, 0, time.UTC)
	q, err := ParseQuery(map[string][]string{"q": {"x"}, "node": {"a,b"}, "level": {"error"}, "since": {"10m"},
		"until": {"2026-04-08T23:00:00Z"}, "size": {"5000"}, "facets": {"1"}}, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(q.Nodes) != 2 || !q.Since.Equal(now.Add(-10*time.Minute)) || !q.Until.Equal(now) || q.Size != 1000 || !q.Facets {
		t.Errorf("%+v", q)
	}
	if _, err := ParseQuery(map[string][]string{"since": {"yesterday"}}, now); err == nil {
		t.Error("bad since: no error")
	}
}
