package index

import (
	"context"
	"fmt"
	"testing"

	"github.com/faultline/faultline/parsers"
)

// TestPruneAndDropPartition: PruneTo drops the records of the blocks
// marked (Mark) under a label below its floor, not those marked later,
// and DropPartition a partition's records indexed so far, from every
// search, count and lookup; a reopen keeps the drop; the same records
// added again are indexed again (the duplicate check does not see dead
// ones) and stay after a reopen.
func TestPruneAndDropPartition(t *testing.T) {
	var evs []*parsers.Event
	for i := range 300 {
		e := ev(fmt.Sprintf("spark-%d", 1+i%3), "p.log", i+1, i, parsers.SourceVLLM, "info", "prune line")
		e.Partition = i % 3
		evs = append(evs, e)
	}
	// Three batches, marked 100, 200, 300 (as the stream's last sequence
	// after each); the stream's first sequence 201 drops the first two.
	marked := func(x *Index) {
		// The first mark keeps what the index held before (nothing).
		if err := x.Mark(func() (uint64, error) { return 0, nil }); err != nil {
			t.Fatal(err)
		}
		for i, label := range []uint64{100, 200, 300} {
			addAll(t, x, evs[i*100:(i+1)*100])
			if err := x.Mark(func() (uint64, error) { return label, nil }); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, tc := range []struct {
		name string
		add  func(*Index)
		do   func(*Index) error
		kept func(i int, e *parsers.Event) bool
	}{
		{"prune to the stream's first sequence", marked, func(x *Index) error {
			if n, err := x.PruneTo(100); n != 0 || err != nil { // nothing below 100
				t.Fatalf("PruneTo(100): %d, %v", n, err)
			}
			n, err := x.PruneTo(201)
			if n != 200 {
				t.Errorf("PruneTo(201) dropped %d, want 200", n)
			}
			return err
		}, func(i int, e *parsers.Event) bool { return i >= 200 }},
		{"what the index held at its first mark stays", func(x *Index) {
			for i, label := range []uint64{50, 150, 300} {
				addAll(t, x, evs[i*100:(i+1)*100])
				if err := x.Mark(func() (uint64, error) { return label, nil }); err != nil {
					t.Fatal(err)
				}
			}
		}, func(x *Index) error {
			n, err := x.PruneTo(1000)
			if n != 200 {
				t.Errorf("PruneTo(1000) dropped %d, want 200", n)
			}
			return err
		}, func(i int, e *parsers.Event) bool { return i < 100 }},
		{"drop partition 1", func(x *Index) { addAll(t, x, evs) },
			func(x *Index) error { _, err := x.DropPartition(context.Background(), 1); return err },
			func(i int, e *parsers.Event) bool { return e.Partition != 1 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			x, err := Open(dir, Options{Shards: 3})
			if err != nil {
				t.Fatal(err)
			}
			tc.add(x)
			want := 0
			for i, e := range evs {
				if tc.kept(i, e) {
					want++
				}
			}
			total := func(x *Index) int {
				t.Helper()
				res, err := x.Search(context.Background(), Query{Text: "line", Size: 1, Facets: true})
				if err != nil {
					t.Fatal(err)
				}
				n, _ := x.DocCount()
				if uint64(n) != res.Total {
					t.Errorf("DocCount %d, search total %d", n, res.Total)
				}
				return int(res.Total)
			}
			if got := total(x); got != len(evs) {
				t.Fatalf("before: %d of %d", got, len(evs))
			}
			if err := tc.do(x); err != nil {
				t.Fatal(err)
			}
			if got := total(x); got != want {
				t.Errorf("after: %d records, want %d", got, want)
			}
			for i, e := range evs {
				_, found, err := x.Get(context.Background(), e.ID)
				if err != nil {
					t.Fatal(err)
				}
				if found != tc.kept(i, e) {
					t.Errorf("%s (partition %d, %v): found %v", e.ID, e.Partition, e.Time, found)
					break
				}
			}
			reopen := func() {
				t.Helper()
				if err := x.Close(); err != nil {
					t.Fatal(err)
				}
				if x, err = Open(dir, Options{}); err != nil {
					t.Fatal(err)
				}
			}
			reopen()
			if got := total(x); got != want {
				t.Errorf("reopened: %d records, want %d", got, want)
			}
			addAll(t, x, evs)
			if got := total(x); got != len(evs) {
				t.Errorf("added again: %d records, want %d", got, len(evs))
			}
			reopen()
			defer x.Close()
			if got := total(x); got != len(evs) {
				t.Errorf("added again, reopened: %d records, want %d", got, len(evs))
			}
		})
	}
}
