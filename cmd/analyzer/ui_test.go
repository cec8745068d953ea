package main

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/internal/testutil"
)

// TestUITokenFromEnvNotPrinted: ui takes its token from
// $FAULTLINE_HTTP_TOKEN and does not print it (it printed the URL with
// ?token= on the terminal); the API wants it.
func TestUITokenFromEnvNotPrinted(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if _, errs, code := runCmd(t, "ingest", "-q", "--data-dir", dir, filepath.Join(seed, "failed")); code != 0 {
		t.Fatalf("ingest: exit %d: %s", code, errs)
	}
	const token = "ui-s3cret-token"
	t.Setenv("FAULTLINE_HTTP_TOKEN", token)
	base, out, errs := startUI(t, "--data-dir", dir)
	url := base + "/"
	if strings.Contains(out.String()+errs.String(), token) {
		t.Errorf("ui printed its token:\n%s\n%s", out.String(), errs.String())
	}
	for _, tt := range []struct {
		auth string
		want int
	}{{"", http.StatusUnauthorized}, {"Bearer " + token, http.StatusOK}} {
		wantStatus(t, url+"api/findings", tt.auth, tt.want)
	}
}

// startUI runs `analyzer ui` with args on a free port until the test ends
// and returns its base URL (no trailing slash) and its output so far.
func startUI(t *testing.T, args ...string) (base string, out, errs *testutil.Buffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out, errs = &testutil.Buffer{}, &testutil.Buffer{}
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, append([]string{"ui", "--http", "127.0.0.1:0"}, args...), nil, out, errs)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("ui did not stop on cancel")
		}
	})
	testutil.CheckFor(t, 20*time.Second, 20*time.Millisecond, func() error {
		m := regexp.MustCompile(`UI on (http://\S+)/`).FindStringSubmatch(out.String())
		if m == nil {
			return fmt.Errorf("no URL printed yet: %q %q", out.String(), errs.String())
		}
		base = m[1]
		return nil
	})
	return base, out, errs
}

// wantStatus GETs url with the Authorization header auth ("" for none) and
// checks the status code.
func wantStatus(t *testing.T, url, auth string, want int) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != want {
		t.Errorf("GET %s with Authorization %q: %d, want %d", url, auth, resp.StatusCode, want)
	}
}
