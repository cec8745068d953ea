package parsers

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestWriterTableActsAsAMap runs random adds, lookups and deletes against
// a Go map, with real hashes and with hashes squeezed into a few values
// (every probe chain long, every deletion shifting entries back).
func TestWriterTableActsAsAMap(t *testing.T) {
	for _, tc := range []struct {
		name string
		hash func(t *writerTable, k joinKey) uint64
	}{
		{"maphash", (*writerTable).hash},
		{"colliding", func(t *writerTable, k joinKey) uint64 { return t.hash(k) % 7 }},
		{"one-home", func(*writerTable, joinKey) uint64 { return 3 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			tab := newWriterTable()
			ref := map[joinKey]*pendingRecord{}
			for op := 0; op < 200_000; op++ {
				k := joinKey{stream: "stdout", prefix: fmt.Sprint(rng.IntN(300)), nccl: fmt.Sprint(rng.IntN(3))}
				h := tc.hash(&tab, k)
				got := tab.get(k, h)
				if got != ref[k] {
					t.Fatalf("op %d: get(%v) = %p, map has %p", op, k, got, ref[k])
				}
				switch {
				case got == nil:
					p := &pendingRecord{key: k}
					tab.put(p, h)
					ref[k] = p
				case rng.IntN(2) == 0:
					tab.del(got)
					delete(ref, k)
				}
				if tab.n != len(ref) {
					t.Fatalf("op %d: %d entries, map has %d", op, tab.n, len(ref))
				}
			}
			for k, p := range ref {
				if got := tab.get(k, p.hash); got != p {
					t.Fatalf("get(%v) = %p at the end, want %p", k, got, p)
				}
			}
		})
	}
}
