package transport

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/faultline/faultline/parsers"
)

// TestDecodeOldBatches: batches written by the encoder of format 1 (NDJSON,
// every record whole; testdata/v1, made by wire.Encoder before format 2)
// still decode to the same records, so a stream written by older shippers
// stays readable.
func TestDecodeOldBatches(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "v1", "*.ndjson"))
	if len(files) < 3 {
		t.Fatalf("%d golden batches", len(files))
	}
	for _, f := range files {
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		wantJSON, err := os.ReadFile(strings.TrimSuffix(f, ".ndjson") + ".want.json")
		if err != nil {
			t.Fatal(err)
		}
		var want []parsers.Record
		if err := json.Unmarshal(wantJSON, &want); err != nil {
			t.Fatal(err)
		}
		got, err := Decode(body)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d records, want %d", f, len(got), len(want))
		}
		for i := range want {
			if !reflect.DeepEqual(normalize(got[i]), normalize(want[i])) {
				t.Errorf("%s: record %d:\n got %+v\nwant %+v", f, i, got[i], want[i])
			}
		}
	}
}
