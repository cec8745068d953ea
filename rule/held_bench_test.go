package rule

import (
	"fmt"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// cpuTime is the process's user and system time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkObserveFindingsHeld is the cost of one 3-event launch (a vLLM
// banner, a shared-memory error, a collective timeout: two findings) with n
// findings raised before it: in its own cluster over n launches
// ("launches"), or one in each of n other clusters ("clusters"), by serve's
// engine (it forgets findings with their launch). Evaluation must not grow
// with the findings raised:
//
//	go test ./rule -run '^$' -bench ObserveFindingsHeld -benchtime 2000x
func BenchmarkObserveFindingsHeld(b *testing.B) {
	rules := mustParse(b, testRules)
	launch := func(e *Engine, cluster string, i int) int {
		n := 0
		for j, msg := range []string{
			"vLLM API server version 0.9.0",
			fmt.Sprintf("Error while creating shared memory segment /dev/shm/nccl-%d", i),
			fmt.Sprintf("Watchdog caught collective operation timeout: OpType=ALLREDUCE%d", i),
		} {
			x := ev("a", i*3+j, msg)
			x.Cluster = cluster
			x.ID = fmt.Sprintf("%s/%d/%d", cluster, i, j)
			n += len(e.Observe(x))
		}
		return n
	}
	for _, shape := range []string{"launches", "clusters"} {
		for _, n := range []int{1000, 10000, 100000} {
			b.Run(fmt.Sprintf("%s/%d", shape, n), func(b *testing.B) {
				e := NewEngine(rules)
				e.ForgetFindings() // as serve's
				for i := range n {
					cluster := "c1"
					if shape == "clusters" {
						cluster = fmt.Sprintf("c%d", i)
					}
					if launch(e, cluster, i) == 0 {
						b.Fatal("the launch raised no finding")
					}
				}
				measured := "c1"
				if shape == "clusters" {
					measured = "bench"
				}
				runtime.GC() // the setup's garbage is not the launch's
				b.ResetTimer()
				cpu := cpuTime()
				for i := range b.N {
					launch(e, measured, n+i)
				}
				// CPU time too: on a shared machine the wall clock counts
				// others' work.
				b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}
