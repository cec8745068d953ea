package shipper

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"
)

// Offsets advance only over the contiguous prefix of acknowledged batches:
// an ack of a later batch never moves the offset past an unacknowledged one,
// and a batch without a safe point (cut mid-flush) never moves it at all.
func TestTrackerContiguousPrefix(t *testing.T) {
	tests := []struct {
		name  string
		marks []mark
		acks  []int
		want  int64 // offset persisted after the acks, -1 for none
	}{
		{"in order", []mark{{offset: 10, advance: true}, {offset: 20, advance: true}}, []int{0, 1}, 20},
		{"later first", []mark{{offset: 10, advance: true}, {offset: 20, advance: true}}, []int{1}, -1},
		{"later then earlier", []mark{{offset: 10, advance: true}, {offset: 20, advance: true}, {offset: 30, advance: true}}, []int{1, 0}, 20},
		{"no safe point", []mark{{offset: 10, advance: true}, {offset: 10}}, []int{0, 1}, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := OpenStore(t.TempDir(), slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			tr := &tracker{store: st, key: "k"}
			ms := make([]*mark, len(tt.marks))
			for i := range tt.marks {
				ms[i] = &tt.marks[i]
				tr.add(ms[i])
			}
			for _, i := range tt.acks {
				tr.ack(ms[i])
			}
			e, ok := st.Get("k")
			if got := map[bool]int64{true: e.Offset, false: -1}[ok]; got != tt.want {
				t.Errorf("persisted offset %d, want %d", got, tt.want)
			}
		})
	}
}

// The state survives a reopen, and a torn temporary file left by a crash
// does not matter: only the renamed file is read.
func TestStoreAtomic(t *testing.T) {
	dir := t.TempDir()
	st, _ := OpenStore(dir, slog.New(slog.DiscardHandler))
	st.Set("1:2:ab", Entry{Path: "/x", Offset: 42, Line: 3})
	if err := st.Flush(); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, stateFile+".tmp123"), []byte(`{"torn`), 0o644)
	st2, err := OpenStore(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if e, ok := st2.Get("1:2:ab"); !ok || e.Offset != 42 || e.Line != 3 {
		t.Fatalf("reopened entry %+v, %v", e, ok)
	}
}
