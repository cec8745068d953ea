package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/internal/testutil"
)

// getJSON GETs url with an optional bearer token and decodes the body into
// v when the status is 200; it returns the status.
func getJSON(t *testing.T, url, token string, v any) int {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK && v != nil {
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
	}
	return resp.StatusCode
}

// TestVersionAndRulesEndpoints: /version names the build, /api/rules lists
// the loaded rules with the file each came from, built-in and --rules alike.
func TestVersionAndRulesEndpoints(t *testing.T) {
	dir := t.TempDir()
	extra := filepath.Join(dir, "probe.yaml")
	writeFile(t, extra, probeRule)
	srv := startServer(t, Config{RuleDirs: []string{dir}})
	base := "http://" + srv.addrs.HTTP

	var v struct{ Version, Go string }
	if code := getJSON(t, base+"/version", "", &v); code != http.StatusOK || v.Version == "" || v.Go != runtime.Version() {
		t.Errorf("/version: %d %+v", code, v)
	}
	var rules []ruleInfo
	if code := getJSON(t, base+"/api/rules", "", &rules); code != http.StatusOK {
		t.Fatalf("/api/rules: %d", code)
	}
	files := map[string]string{}
	for _, r := range rules {
		files[r.ID] = r.File
		if r.Cause == "" || r.Severity == "" || r.Title == "" {
			t.Errorf("rule %s listed without cause, severity or title: %+v", r.ID, r)
		}
	}
	if f := files["ray-node-ip-mismatch"]; !strings.HasSuffix(f, ".yaml") {
		t.Errorf("built-in ray-node-ip-mismatch listed from %q, want its pack file", f)
	}
	if f := files["probe"]; f != extra {
		t.Errorf("probe listed from %q, want %s (rules: %v)", f, extra, files)
	}
}

// TestTokenGuardsEndpoints: with an HTTP token, /version and /api/rules
// want it, and /healthz without it says only whether all is well.
func TestTokenGuardsEndpoints(t *testing.T) {
	srv := startServer(t, Config{HTTPToken: "s3cret"})
	base := "http://" + srv.addrs.HTTP
	for _, path := range []string{"/version", "/api/rules", "/api/findings"} {
		if code := getJSON(t, base+path, "", nil); code != http.StatusUnauthorized {
			t.Errorf("%s without the token: %d, want 401", path, code)
		}
		if code := getJSON(t, base+path, "s3cret", nil); code != http.StatusOK {
			t.Errorf("%s with the token: %d, want 200", path, code)
		}
	}
	var open, full map[string]any
	if code := getJSON(t, base+"/healthz", "", &open); code != http.StatusOK {
		t.Fatalf("/healthz: %d", code)
	}
	if len(open) != 1 || open["status"] != "ok" {
		t.Errorf("/healthz without the token: %v, want only the status", open)
	}
	getJSON(t, base+"/healthz", "s3cret", &full)
	if _, ok := full["records"]; !ok || full["status"] != "ok" {
		t.Errorf("/healthz with the token: %v, want the counts", full)
	}
}

// TestHealthzCountsAfterRestart: /healthz counts the records in the index,
// so a restarted serve does not report 0 for what earlier runs indexed.
func TestHealthzCountsAfterRestart(t *testing.T) {
	dir := t.TempDir()
	records := func(base string) (float64, float64) {
		var h map[string]any
		if code := getJSON(t, base+"/healthz", "", &h); code != http.StatusOK {
			t.Fatalf("/healthz: %d", code)
		}
		r, _ := h["records"].(float64)
		lag, _ := h["index_lag"].(float64)
		return r, lag
	}
	srv := startServer(t, Config{DataDir: dir, Demo: seedDir, DemoPace: 200 * time.Millisecond})
	base := "http://" + srv.addrs.HTTP
	var before float64
	testutil.CheckFor(t, 60*time.Second, 100*time.Millisecond, func() error {
		if !strings.Contains(srv.stdout.String(), "replay done") {
			return fmt.Errorf("demo replay not done yet")
		}
		n, lag := records(base)
		if n == 0 || lag != 0 {
			return fmt.Errorf("records %v, index lag %v", n, lag)
		}
		before = n
		return nil
	})
	if err := srv.stop(); err != nil {
		t.Fatal(err)
	}
	srv = startServer(t, Config{DataDir: dir})
	if after, _ := records("http://" + srv.addrs.HTTP); after != before {
		t.Errorf("after a restart /healthz counts %v records, want the %v indexed before", after, before)
	}
}
