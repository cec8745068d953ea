package main

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/faultline/faultline/index"
	"github.com/faultline/faultline/web"
)

// TestSearchServerAsksAsAnyClient: search --server asks the API as any
// client does, not for the analyzer's own part (local=1): against a server
// whose Index (what a cluster member fans out over) holds the seed and
// whose Local part is empty, hits and -C context come from the Index. A
// refused token says where it comes from; --server wants a URL.
func TestSearchServerAsksAsAnyClient(t *testing.T) {
	dir := t.TempDir()
	if _, errs, code := runCmd(t, "ingest", "--data-dir", dir, seed+"/failed"); code != 0 {
		t.Fatalf("ingest exit %d: %s", code, errs)
	}
	all, err := index.Open(dir, index.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { all.Close() })
	empty, err := index.Open(t.TempDir(), index.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { empty.Close() })
	h, err := web.NewHandler(web.Config{Index: all, Local: empty, Token: "remote-token"})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)

	t.Setenv("FAULTLINE_HTTP_TOKEN", "remote-token")
	out, errs, code := runCmd(t, "search", "--server", ts.URL+"/", "--json", "-n", "2", "-C", "1", "192.168.200.12")
	if code != 0 {
		t.Fatalf("search --server: exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for _, l := range lines {
		var h struct {
			Message string
			Before  []index.Hit
		}
		if err := json.Unmarshal([]byte(l), &h); err != nil || !strings.Contains(h.Message, "192.168.200.12") || len(h.Before) != 1 {
			t.Errorf("hit %q (%v): want the address and one event of context before", l, err)
		}
	}
	if len(lines) != 2 || !strings.Contains(errs, "next: ") {
		t.Errorf("%d hits, stderr %q; want 2 and the next page's cursor", len(lines), errs)
	}

	t.Setenv("FAULTLINE_HTTP_TOKEN", "wrong")
	if _, errs, code := runCmd(t, "search", "--server", ts.URL, "x"); code != 2 ||
		!strings.Contains(errs, ts.URL+" wants its HTTP token: set FAULTLINE_HTTP_TOKEN") {
		t.Errorf("a wrong token: exit %d, %q; want 2 and the hint", code, errs)
	}
	for _, bad := range []string{"127.0.0.1:8080", "ftp://127.0.0.1/", "http://", "::"} {
		if _, errs, code := runCmd(t, "search", "--server", bad, "x"); code != 2 || !strings.Contains(errs, "want a URL such as http://") {
			t.Errorf("--server %q: exit %d, %q; want 2 and what a URL looks like", bad, code, errs)
		}
	}
}
