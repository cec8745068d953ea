package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/internal/testutil"
	"github.com/faultline/faultline/sink"
)

// hookServer records the webhook posts it takes; fail, while it returns
// true, answers 502.
type hookServer struct {
	*httptest.Server
	mu       sync.Mutex
	posts    []sink.Payload
	attempts int
}

func newHookServer(t *testing.T, fail func() bool) *hookServer {
	h := &hookServer{}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		defer h.mu.Unlock()
		h.attempts++
		if r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("webhook Content-Type %q", r.Header.Get("Content-Type"))
		}
		if fail != nil && fail() {
			http.Error(w, "down", http.StatusBadGateway)
			return
		}
		var p sink.Payload
		if err := json.Unmarshal(b, &p); err != nil {
			t.Errorf("webhook body %s: %v", b, err)
		}
		h.posts = append(h.posts, p)
	}))
	t.Cleanup(h.Close)
	return h
}

func ids(fs []finding.Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.ID)
	}
	return out
}

// diagnose --webhook posts the findings of a post-mortem as serve posts
// them live: one Slack-style payload per finding, its text naming the cause
// and the finding the diagnose --json schema, the same ids as --json prints.
func TestDiagnoseWebhookPostsFindings(t *testing.T) {
	for _, dir := range []string{seed + "/failed", "../../testdata/logs/real/21-ray-oom-killer-vllm-worker"} {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			want := diagnoseJSON(t, dir)
			if len(want) == 0 {
				t.Fatalf("%s: diagnose finds nothing", dir)
			}
			h := newHookServer(t, nil)
			out, errs, code := diagnose(t, "--webhook", h.URL, dir)
			if code != 0 {
				t.Fatalf("diagnose --webhook: exit %d\n%s", code, errs)
			}
			if !strings.Contains(out, want[0].Rule) {
				t.Errorf("the report on stdout is missing:\n%s", out)
			}
			h.mu.Lock()
			defer h.mu.Unlock()
			var got []finding.Finding
			for _, p := range h.posts {
				got = append(got, p.Finding)
				f := p.Finding
				if !strings.Contains(p.Text, f.Cause) || !strings.Contains(p.Text, f.Title) {
					t.Errorf("webhook text does not name the cause %q and title %q:\n%s", f.Cause, f.Title, p.Text)
				}
			}
			if !slices.Equal(ids(got), ids(want)) {
				t.Errorf("posted finding ids %v, diagnose --json %v", ids(got), ids(want))
			}
			for i := range min(len(got), len(want)) {
				if got[i].Rule != want[i].Rule || got[i].Cause != want[i].Cause || got[i].Summary != want[i].Summary {
					t.Errorf("posted %s/%s, --json %s/%s", got[i].Rule, got[i].Cause, want[i].Rule, want[i].Cause)
				}
			}
		})
	}
}

// An endpoint that does not take the posts: each finding is tried
// --webhook-attempts times, then diagnose says so and exits 4, after the
// report (which is still printed in full).
func TestDiagnoseWebhookFailureExits4(t *testing.T) {
	h := newHookServer(t, func() bool { return true })
	want := diagnoseJSON(t, seed+"/failed")
	// A Slack hook's path is its secret: the errors name the host only.
	out, errs, code := diagnose(t, "--json", "--webhook", h.URL+"/services/T0/B0/SECRET", "--webhook-attempts", "3", "--webhook-backoff", "1ms", seed+"/failed")
	if code != 4 {
		t.Fatalf("exit %d, want 4\n%s", code, errs)
	}
	if !strings.Contains(errs, "not posted after 3 attempts") || !strings.Contains(errs, "502") {
		t.Errorf("stderr does not say the posts failed and why:\n%s", errs)
	}
	if strings.Contains(errs, "SECRET") {
		t.Errorf("stderr shows the webhook's secret path:\n%s", errs)
	}
	if n := strings.Count(strings.TrimSpace(out), "\n"); n != len(want) {
		t.Errorf("report has %d finding lines before its summary, want %d findings", n, len(want))
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.attempts != 3*len(want) {
		t.Errorf("%d attempts for %d findings, want 3 each", h.attempts, len(want))
	}
}

// A flaky endpoint (the first two posts fail) gets every finding in the end,
// and diagnose exits 0.
func TestDiagnoseWebhookRetries(t *testing.T) {
	var mu sync.Mutex
	n := 0
	h := newHookServer(t, func() bool { mu.Lock(); defer mu.Unlock(); n++; return n <= 2 })
	want := diagnoseJSON(t, seed+"/both")
	_, errs, code := diagnose(t, "--webhook", h.URL, "--webhook-backoff", "1ms", seed+"/both")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	got := ids(func() []finding.Finding {
		var fs []finding.Finding
		for _, p := range h.posts {
			fs = append(fs, p.Finding)
		}
		return fs
	}())
	slices.Sort(got)
	w := ids(want)
	slices.Sort(w)
	if !slices.Equal(got, w) {
		t.Errorf("posted %v, want %v", got, w)
	}
}

// --publish-nats puts the findings on serve's findings subject, and
// --findings-json appends them to a file as diagnose --json prints them.
func TestDiagnosePublishesAndWritesJSONLines(t *testing.T) {
	ns := testutil.RunJetStreamServer(t)
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	msgs := make(chan *nats.Msg, 64)
	sub, err := nc.ChanSubscribe("faultline.findings.>", msgs)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	nc.Flush()

	want := diagnoseJSON(t, seed+"/failed")
	file := filepath.Join(t.TempDir(), "findings.jsonl")
	_, errs, code := diagnose(t, "--publish-nats", ns.ClientURL(), "--findings-json", file, seed+"/failed")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	var got []finding.Finding
	testutil.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		for {
			select {
			case m := <-msgs:
				var f finding.Finding
				if err := json.Unmarshal(m.Data, &f); err != nil {
					t.Fatalf("%s: %v", m.Subject, err)
				}
				if want := "faultline.findings." + f.Cluster + "." + string(f.Severity); m.Subject != want {
					t.Errorf("subject %s, want %s", m.Subject, want)
				}
				got = append(got, f)
			default:
				if len(got) < len(want) {
					return fmt.Errorf("%d of %d findings published so far", len(got), len(want))
				}
				return nil
			}
		}
	})
	if !slices.Equal(ids(got), ids(want)) {
		t.Errorf("published %v, want %v", ids(got), ids(want))
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	out, _, _ := diagnose(t, "--json", seed+"/failed")
	// The same finding lines; --json closes with its summary record.
	if findingLines := out[:strings.LastIndex(strings.TrimSuffix(out, "\n"), "\n")+1]; string(b) != findingLines {
		t.Errorf("--findings-json file differs from --json output:\n%s\nvs\n%s", b, findingLines)
	}
}

// ingest --webhook posts the findings it stores, as diagnose does; ingesting
// the same logs again stores the same findings and posts nothing new.
func TestIngestWebhookPostsNewFindingsOnce(t *testing.T) {
	h := newHookServer(t, nil)
	want := diagnoseJSON(t, seed+"/failed")
	dir := t.TempDir()
	for i := range 2 {
		var out, errb strings.Builder
		code := run(context.Background(), []string{"ingest", "-q", "--data-dir", dir, "--webhook", h.URL, seed + "/failed"}, nil, &out, &errb)
		if code != 0 {
			t.Fatalf("ingest %d: exit %d\n%s", i+1, code, errb.String())
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	var got []finding.Finding
	for _, p := range h.posts {
		got = append(got, p.Finding)
	}
	if !slices.Equal(ids(got), ids(want)) {
		t.Errorf("posted %v over two ingests, want %v once", ids(got), ids(want))
	}
}

// serve --findings-json writes every version of every finding it announces
// live as a JSON line: the sink diagnose and ingest take, in live mode; the
// findings it writes for the seed are the ones diagnose finds offline.
func TestServeWritesFindingsJSONLines(t *testing.T) {
	want := ids(diagnoseJSON(t, seed+"/failed"))
	slices.Sort(want)
	file := filepath.Join(t.TempDir(), "live.jsonl")
	startServe(t, "--demo", "--demo-logs", seed+"/failed", "--demo-pace", "1s", "--findings-json", file)
	testutil.CheckFor(t, 60*time.Second, 100*time.Millisecond, func() error {
		b, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		seen := map[string]bool{}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if line == "" {
				continue
			}
			var f finding.Finding
			if err := json.Unmarshal([]byte(line), &f); err != nil {
				t.Fatalf("bad line %q: %v", line, err)
			}
			seen[f.ID] = true
		}
		var got []string
		for id := range seen {
			got = append(got, id)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			return fmt.Errorf("findings in %s: %v, want %v", file, got, want)
		}
		return nil
	})
}

// An endpoint that cannot be reached: exit 4, and the error names the host,
// not the hook's secret path (the HTTP client's error quotes the whole URL).
func TestDiagnoseWebhookUnreachableHidesPath(t *testing.T) {
	h := httptest.NewServer(http.NotFoundHandler())
	h.Close()
	_, errs, code := diagnose(t, "--webhook", h.URL+"/services/T0/B0/SECRET", "--webhook-attempts", "2", "--webhook-backoff", "1ms", seed+"/failed")
	if code != 4 {
		t.Fatalf("exit %d, want 4\n%s", code, errs)
	}
	host := strings.TrimPrefix(h.URL, "http://")
	if !strings.Contains(errs, "post to "+host) || strings.Contains(errs, "SECRET") {
		t.Errorf("stderr should name %s and not the path:\n%s", host, errs)
	}
}
