package main

import (
	"strings"
	"testing"
)

// search gives up at --timeout and says why.
func TestSearchTimeout(t *testing.T) {
	dir := t.TempDir()
	if _, errs, code := runCmd(t, "ingest", "--data-dir", dir, seed); code != 0 {
		t.Fatalf("ingest exit %d: %s", code, errs)
	}
	_, errs, code := runCmd(t, "search", "--data-dir", dir, "--timeout", "1us", "/zz.*qq/")
	if code == 0 || !strings.Contains(errs, "deadline") {
		t.Errorf("search past --timeout: exit %d, stderr %q", code, errs)
	}
	if _, errs, code := runCmd(t, "search", "--data-dir", dir, "ray"); code != 0 {
		t.Errorf("plain search: exit %d, stderr %q", code, errs)
	}
}
