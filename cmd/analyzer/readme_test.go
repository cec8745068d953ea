package main

import (
	"os"
	"strings"
	"testing"
)

// TestREADMEShowsDiagnoseOutput: the README's block under its diagnose
// marker is what `analyzer diagnose testdata/logs/seed/failed` prints, byte
// for byte (paths as given from the repository's root). A change to the
// report, the rules or the seed that changes the front page's example
// fails here until the README is regenerated:
//
//	go run ./cmd/analyzer diagnose testdata/logs/seed/failed
func TestREADMEShowsDiagnoseOutput(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const marker = "<!-- diagnose testdata/logs/seed/failed"
	_, rest, ok := strings.Cut(string(b), marker)
	if !ok {
		t.Fatalf("README.md has no %q marker before the diagnose block", marker)
	}
	_, rest, ok = strings.Cut(rest, "```text\n")
	if !ok {
		t.Fatal("README.md: no ```text block after the diagnose marker")
	}
	block, _, ok := strings.Cut(rest, "```\n")
	if !ok {
		t.Fatal("README.md: the diagnose block is not closed")
	}
	out, errs, code := diagnose(t, seed+"/failed")
	if code != 0 {
		t.Fatalf("diagnose: exit %d\n%s", code, errs)
	}
	// diagnose names files as given; the README gives them from the root.
	out = strings.ReplaceAll(out, "../../testdata/", "testdata/")
	if block == out {
		return
	}
	got, want := strings.Split(block, "\n"), strings.Split(out, "\n")
	for i := range max(len(got), len(want)) {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			t.Fatalf("README.md's diagnose block differs from diagnose's output at its line %d:\nREADME:   %q\ndiagnose: %q\n(paste the output of `go run ./cmd/analyzer diagnose testdata/logs/seed/failed` into the block)", i+1, g, w)
		}
	}
}
