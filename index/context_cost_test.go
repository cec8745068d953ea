package index

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/faultline/faultline/parsers"
)

// The context of a record costs about what its neighbours cost, not what
// the index holds: the last records of a short file next to a long one
// (whose line numbers fill the shared dictionary) took 3-9 s and up to
// 2.6 GB per call on 600k events.
func TestContextCostIsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("indexes 120k events")
	}
	x := openTest(t, Options{Shards: 2})
	var evs []*parsers.Event
	const long, short = 100000, 20000
	for i := 1; i <= long; i++ {
		evs = append(evs, ev("spark-1", "nccl.log", i, i/100, parsers.SourceNCCL, parsers.LevelInfo, fmt.Sprintf("long %d", i)))
	}
	for i := 1; i <= short; i++ {
		evs = append(evs, ev("spark-2", "vllm.log", 3*i, i/10, parsers.SourceVLLM, parsers.LevelInfo, fmt.Sprintf("short %d", i)))
	}
	addAll(t, x, evs)
	for _, c := range []struct {
		name   string
		id     string
		before int
		after  int
	}{
		{"last of the short file", evs[long+short-1].ID, 10, 0},
		{"middle of the short file", evs[long+short/2].ID, 10, 10},
		{"last of the long file", evs[long-1].ID, 10, 0},
		{"first of the long file", evs[0].ID, 0, 10},
	} {
		var ms0, ms1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms0)
		start := time.Now()
		got, err := x.Context(context.Background(), c.id, 10)
		took := time.Since(start)
		runtime.ReadMemStats(&ms1)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Before) != c.before || len(got.After) != c.after {
			t.Errorf("%s: %d before, %d after; want %d, %d", c.name, len(got.Before), len(got.After), c.before, c.after)
		}
		alloc := ms1.TotalAlloc - ms0.TotalAlloc
		t.Logf("%s: %v, %d MB allocated", c.name, took, alloc>>20)
		if alloc > 64<<20 {
			t.Errorf("%s: %d MB allocated for 20 neighbours", c.name, alloc>>20)
		}
	}
}
