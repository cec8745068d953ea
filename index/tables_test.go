package index

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/parsers"
)

func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite golden files")
	}
}

// TestGroupTablesAreStable: the term tables of an index's groups (their
// blocks, length and CRC) are those that earlier versions of layout 5 wrote
// for the same records, kept in testdata/group-tables.golden. A shard
// indexed again from its chunk store (reindex) makes its tables from the
// records and refuses a group whose table differs, so a change to how the
// tables are made must leave them byte for byte alike (or be a new layout).
// The records: generated lines of 2 nodes (fields, PIDs, ranks, buckets)
// and the tricky messages, in writes of a few batches.
func TestGroupTablesAreStable(t *testing.T) {
	const golden = "testdata/group-tables.golden"
	dir := t.TempDir()
	paths := loggenCorpus(t, dir, 2, 12000)
	// One shard: which shard a file goes to depends on its path (a
	// temporary directory).
	x, err := Open(filepath.Join(dir, "data"), Options{Shards: 1, BatchSize: 1500, FlushInterval: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	var evs []*parsers.Event
	parseCorpus(t, paths, func(e *parsers.Event) { ev := *e; evs = append(evs, &ev) })
	evs = append(evs, trickyEvents()...)
	addAll(t, x, evs)
	y := reopenReadOnly(t, x, filepath.Join(dir, "data"))
	var lines []string
	for _, s := range y.shards {
		for _, m := range s.blocks {
			if g := m.grp; g != nil && g.first == m.seq {
				lines = append(lines, fmt.Sprintf("group %d: %d blocks, table %d bytes, crc %08x\n", g.first, g.n, g.tabLen, g.tabCRC))
			}
		}
	}
	if len(lines) < 8 {
		t.Fatalf("%d groups: the test wants several writes and groups", len(lines))
	}
	var got strings.Builder
	for _, l := range lines {
		got.WriteString(l)
	}
	if f := flag.Lookup("update"); f != nil && f.Value.String() == "true" {
		if err := os.WriteFile(golden, []byte(got.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != string(want) {
		t.Errorf("group tables differ from %s:\n%s", golden, got.String())
	}
}

// TestIDFilterFalsePositives: the ID filter says "maybe" for every ID
// added before and for about 1% of the others (each "maybe" costs a
// lookup in the blocks), across the chain of filters it grows.
func TestIDFilterFalsePositives(t *testing.T) {
	f := newIDFilter()
	const n = 300000 // 3 filters: 65,536, 131,072 and 262,144 IDs
	for i := range n {
		f.add(idHash(fmt.Sprintf("node-1/file/%d", i)))
	}
	for i := range n {
		if !f.add(idHash(fmt.Sprintf("node-1/file/%d", i))) {
			t.Fatalf("ID %d added before: the filter says no", i)
		}
	}
	maybe := 0
	const others = 100000
	for i := range others {
		if f.add(idHash(fmt.Sprintf("node-2/file/%d", i))) {
			maybe++
		}
	}
	if rate := float64(maybe) / others; rate > 0.03 {
		t.Errorf("%.2f%% of new IDs are maybes, want about 1%%", rate*100)
	}
	t.Logf("%d filters, %.2f%% false maybes", len(f.filters), float64(maybe)/others*100)
}
