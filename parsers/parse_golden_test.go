package parsers

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files of TestParseGolden")

// TestParseGolden parses the records in testdata/parse/*.txt (records
// separated by a line "---") and compares the events with NAME.golden.json.
// Run with -update to rewrite the golden files after a deliberate change.
func TestParseGolden(t *testing.T) {
	inputs, err := filepath.Glob(filepath.Join("testdata", "parse", "*.txt"))
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no golden inputs: %v", err)
	}
	for _, in := range inputs {
		t.Run(filepath.Base(in), func(t *testing.T) {
			data, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			var events []Event
			for i, r := range goldenRecords(filepath.Base(in), string(data)) {
				ev := parseRecord(r, fixedNow)
				if len(ev.Message) > len(ev.Text) {
					t.Errorf("record %d: message longer than text", i)
				}
				events = append(events, ev)
			}
			got, err := json.MarshalIndent(events, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			golden := strings.TrimSuffix(in, ".txt") + ".golden.json"
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -run TestParseGolden -update)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from the parse result; run go test -run TestParseGolden -update and review the diff", golden)
			}
		})
	}
}

// goldenRecords splits a golden input into records, numbering lines and
// offsets as the joiner would.
func goldenRecords(file, data string) []Record {
	data = strings.TrimSuffix(data, "\n")
	var recs []Record
	line, off := 1, int64(0)
	for _, block := range strings.Split(data, "\n---\n") {
		n := strings.Count(block, "\n") + 1
		recs = append(recs, Record{Node: "node-1", File: file, Offset: off, Line: line, Lines: n, Size: int64(len(block) + 1), Text: block})
		line += n + 1
		off += int64(len(block) + len("\n---\n"))
	}
	return recs
}
