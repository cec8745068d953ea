package parsers

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestParseReusingEqualsParse: an event parsed into a reused map is the
// event Parse gives, record after record (no field left from the one
// before), and its fields are in the map given.
func TestParseReusingEqualsParse(t *testing.T) {
	inputs, err := filepath.Glob(filepath.Join("testdata", "parse", "*.txt"))
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no inputs: %v", err)
	}
	fields := map[string]string{"left": "over"}
	withFields := 0
	for _, in := range inputs {
		data, err := os.ReadFile(in)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range goldenRecords(filepath.Base(in), string(data)) {
			want := parseRecord(r, fixedNow)
			got := parseReusing(r, fixedNow, clearMap(fields))
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s record %d: reusing a map gives\n%+v\nParse gives\n%+v", in, i, got, want)
			}
			if got.Fields != nil {
				withFields++
				got.Fields["probe"] = "x"
				if fields["probe"] != "x" {
					t.Errorf("%s record %d: the fields are not in the map given", in, i)
				}
			}
		}
	}
	if withFields == 0 {
		t.Fatal("no record with fields: the test checks nothing")
	}
}

func clearMap(m map[string]string) map[string]string { clear(m); return m }
