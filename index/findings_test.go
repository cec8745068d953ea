package index

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultline/faultline/finding"
)

// storeFiles reads every file of the data dir outside the Bleve index: the
// findings store, whatever its layout.
func storeFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p == filepath.Join(dir, "index") {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[p] = b
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// rewritten counts the bytes of after that are not an unchanged prefix of
// the same file before: what a write put on disk anew.
func rewritten(before, after map[string][]byte) int {
	n := 0
	for p, b := range after {
		old := before[p]
		common := 0
		for common < len(old) && common < len(b) && old[common] == b[common] {
			common++
		}
		n += len(b) - common
	}
	return n
}

// Issue 22 item 8: announcing a version writes that version, not every
// finding stored. Fails on a store that rewrites one file of all findings
// per put (a million bytes for one finding here).
func TestPutFindingsWritesOnlyTheNewVersion(t *testing.T) {
	dir := t.TempDir()
	x, err := Open(dir, Options{Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	var all []finding.Finding
	for i := range 300 {
		all = append(all, benchFinding(i, 1))
	}
	if err := x.PutFindings(all); err != nil {
		t.Fatal(err)
	}
	before := storeFiles(t, dir)
	f := benchFinding(7, 2)
	if err := x.PutFindings([]finding.Finding{f}); err != nil {
		t.Fatal(err)
	}
	line, _ := json.Marshal(f)
	if n := rewritten(before, storeFiles(t, dir)); n > 2*len(line) {
		t.Errorf("storing one version of %d bytes wrote %d bytes", len(line), n)
	}
	if got := x.Findings(); len(got) != 300 {
		t.Errorf("%d findings stored, want 300", len(got))
	}
}

// The log survives a reopen with the last version of each finding, drops
// a last line cut short by a crash (and appends after it), takes over the
// findings.json of earlier versions, and is compacted at open once most of
// its lines are old versions.
func TestFindingsLogReopens(t *testing.T) {
	dir := t.TempDir()
	open := func() *Index {
		t.Helper()
		x, err := Open(dir, Options{Shards: 1})
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	titles := func(x *Index) map[string]string {
		out := map[string]string{}
		for _, f := range x.Findings() {
			out[f.ID] = f.Title
		}
		return out
	}
	// findings.json as earlier versions wrote it.
	old, _ := json.Marshal([]finding.Finding{{ID: "a", Title: "a1"}, {ID: "b", Title: "b1"}})
	if err := os.WriteFile(filepath.Join(dir, findingsJSONName), old, 0o600); err != nil {
		t.Fatal(err)
	}
	x := open()
	if got := titles(x); got["a"] != "a1" || got["b"] != "b1" {
		t.Fatalf("findings.json not taken over: %v", got)
	}
	if _, err := os.Stat(filepath.Join(dir, findingsJSONName)); err == nil {
		t.Error("findings.json still there after the take-over")
	}
	for i := range 2000 {
		if err := x.PutFindings([]finding.Finding{{ID: "a", Title: "a" + strings.Repeat("x", i%3)}, {ID: "c", Title: "c"}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := x.PutFindings([]finding.Finding{{ID: "a", Title: "a-last"}}); err != nil {
		t.Fatal(err)
	}
	x.Close()
	// A crash in the middle of a put: half a line at the end.
	segs, err := segments(filepath.Join(dir, findingsDirName))
	if err != nil || len(segs) == 0 {
		t.Fatalf("segments %v: %v", segs, err)
	}
	last := filepath.Join(dir, findingsDirName, segmentName(segs[len(segs)-1]))
	f, err := os.OpenFile(last, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"id":"b","title":"torn`)
	f.Close()

	x = open()
	want := map[string]string{"a": "a-last", "b": "b1", "c": "c"}
	if got := titles(x); !mapsEqual(got, want) {
		t.Errorf("after reopen %v, want %v", got, want)
	}
	if err := x.PutFindings([]finding.Finding{{ID: "b", Title: "b2"}}); err != nil {
		t.Fatal(err)
	}
	x.Close()
	x = open()
	defer x.Close()
	want["b"] = "b2"
	if got := titles(x); !mapsEqual(got, want) {
		t.Errorf("after a put past the torn line %v, want %v", got, want)
	}
	// 4,000 lines of three findings: written anew at the open before.
	lines := 0
	for _, b := range storeFiles(t, dir) {
		lines += strings.Count(string(b), "\n")
	}
	if lines > 10 {
		t.Errorf("%d lines stored for 3 findings: not compacted", lines)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
